import assert from 'node:assert/strict';
import { test } from 'node:test';
import { barChart, niceCeiling, usageChart } from './chart.ts';

test('the usage chart draws one bar per day, tallest for the busiest day', () => {
  const svg = usageChart([
    { day: '2026-11-19', count: 0 },
    { day: '2026-11-20', count: 40 },
    { day: '2026-11-21', count: 10 },
  ]).value;
  const heights = [...svg.matchAll(/class="chart-bar"[^>]* height="([\d.]+)"/g)].map((m) => Number(m[1]));
  assert.equal(heights.length, 3);
  assert.equal(heights[0], 0);
  assert.ok((heights[1] as number) > (heights[2] as number) * 3.9);
  assert.ok(svg.includes('<title>2026-11-20: 40</title>'));
  assert.ok(svg.includes('aria-hidden="true"'));
});

test('the chart axis rounds up to 1, 2 or 5 times a power of ten', () => {
  assert.deepEqual([0, 1, 3, 40, 101, 999].map(niceCeiling), [1, 1, 5, 50, 200, 1000]);
});

test('the bar chart draws one bar per label in the order given, each as long as its count, with the exact number', () => {
  const svg = barChart([
    { label: 'Monaco', count: 1200 },
    { label: 'A city with a name far too long to fit', count: 300 },
    { label: '3 other cities', count: 0 },
  ]).value;
  const widths = [...svg.matchAll(/class="chart-bar"[^>]* width="([\d.]+)"/g)].map((m) => Number(m[1]));
  assert.equal(widths.length, 3);
  assert.ok(Math.abs((widths[0] as number) / (widths[1] as number) - 4) < 0.01);
  assert.equal(widths[2], 0);
  assert.ok(svg.includes('>1,200</text>'));
  assert.ok(svg.includes('<title>A city with a name far too long to fit: 300</title>'), 'the full label in the title');
  assert.ok(svg.includes('>A city with a name far to…</text>'));
  assert.ok(svg.includes('aria-hidden="true"'));
});
