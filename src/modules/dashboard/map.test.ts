import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMap, scaleBar, viewBox } from './map.ts';

const monaco = [
  { lat: 43.7384, lon: 7.4246, name: 'Café de Paris' },
  { lat: 43.7311, lon: 7.4197, name: 'Le Rocher <b>' },
];

test('the map draws one marker per result with its name as an escaped tooltip', () => {
  const svg = renderMap({ results: monaco, context: [], labels: [], title: '2 results in Monaco' }).value;
  assert.equal(svg.match(/class="map-result"/g)?.length, 2);
  assert.ok(svg.includes('<title>Le Rocher &lt;b&gt;</title>'));
  assert.ok(svg.includes('<title id="map-title">2 results in Monaco</title>'));
});

test('a city-scale map leaves out the coarse Natural Earth layers and keeps footprint, labels and a metre scale', () => {
  const svg = renderMap({
    results: monaco,
    context: [{ lat: 43.735, lon: 7.42 }],
    labels: [{ lat: 43.7396, lon: 7.4278, name: 'Monte-Carlo' }],
    title: 't',
  }).value;
  assert.equal(svg.includes('class="map-land"'), false);
  assert.equal(svg.includes('class="map-border"'), false);
  assert.equal(svg.match(/<g class="map-footprint"><circle /g)?.length, 1);
  assert.ok(svg.includes('>Monte-Carlo</text>'));
  assert.match(svg, /<text x="0" y="-7">\d+ m<\/text>/);
});

test('a country-scale map fills land from Natural Earth over a sea background', () => {
  const results = [
    { lat: 43.7384, lon: 7.4246, name: 'Monaco' },
    { lat: 48.8566, lon: 2.3522, name: 'Paris' },
  ];
  const svg = renderMap({ results, context: [], labels: [], title: 't' }).value;
  assert.ok(svg.includes('class="map-sea"'));
  assert.match(svg, /class="map-land" d="M/);
  assert.match(svg, /class="map-border" d="M[-\d.]+ [-\d.]+L/, 'the French–Monegasque and other borders are drawn');
  assert.match(svg, /<text x="0" y="-7">\d+ km<\/text>/);
});

test('the view box of no results is a square of at least 1.5 km around the given centre', () => {
  const box = viewBox([], { lat: 43.7384, lon: 7.4246 }, 500, 500);
  const widthM = (box.east - box.west) * 111_320 * Math.cos((43.7384 * Math.PI) / 180);
  assert.ok(widthM >= 1490 && widthM < 1600, `width ${widthM} m`);
  assert.ok(box.south < 43.7384 && box.north > 43.7384);
});

test('the scale bar picks a round length that fits', () => {
  assert.deepEqual({ ...scaleBar(10), px: Math.round(scaleBar(10).px) }, { metres: 1000, px: 100, label: '1 km' });
  assert.equal(scaleBar(3).label, '200 m');
});
