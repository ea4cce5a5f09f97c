import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { iso1A2Code } from '@rapideditor/country-coder';
import { BORDER_TOLERANCE_M, CountryBorders } from './borders.ts';
import { loadGazetteer } from './gazetteer.ts';

const g = loadGazetteer();
const known = (code: string) => g.resolveCountry(code)?.code === code;

describe('country borders', () => {
  test('answers from its cell cache what country-coder answers for each point', () => {
    // Grids over Monaco and its French surroundings, and over Liechtenstein with Switzerland and Austria,
    // each walked from the west and from the east (a cell is first met from either side) and then again:
    // the later passes are answered from the cache where a cell lies in one country.
    for (const [south, west, north, east] of [
      [43.72, 7.4, 43.76, 7.45],
      [47.04, 9.46, 47.28, 9.65],
      // The edge of France's coastal waters off Brittany, where some cells are partly open sea.
      [47.4, -5.2, 47.6, -4.95],
    ] as const) {
      const seen = new Set<string>();
      const steps = Array.from({ length: 42 }, (_, i) => i / 41);
      for (const order of [steps, [...steps].reverse()]) {
        const borders = new CountryBorders(known);
        for (const f of [...order, ...order]) {
          const lon = west + f * (east - west);
          for (let lat = south; lat <= north; lat += (north - south) / 37) {
            const code = borders.at(lat, lon).code;
            assert.equal(code, iso1A2Code([lon, lat], { level: 'territory' }), `${lat},${lon}`);
            seen.add(code ?? 'open sea');
          }
        }
      }
      assert.ok(seen.size >= 2, `both sides of the border or coast were walked: ${[...seen]}`);
    }
  });

  test('names the other countries within the tolerance of a point, and none well inside one', () => {
    const borders = new CountryBorders(known);
    // Boulevard de France, Monaco: the street beside Beausoleil.
    const monaco = borders.at(43.7413, 7.4236);
    assert.deepEqual(monaco, { code: 'MC', parent: 'MC' });
    assert.deepEqual(borders.othersNear(43.7413, 7.4236, monaco), ['FR']);
    // Vaduz town hall, about 1.5 km from the Rhine.
    const vaduz = borders.at(47.1397, 9.5219);
    assert.deepEqual([vaduz.code, borders.othersNear(47.1397, 9.5219, vaduz)], ['LI', []]);
    assert.ok(BORDER_TOLERANCE_M < 1500);
  });

  test('gives territories their own code with their country as parent, and nothing far out at sea', () => {
    const borders = new CountryBorders(known);
    assert.deepEqual(borders.at(16.2411, -61.5331), { code: 'GP', parent: 'FR' });
    assert.deepEqual(borders.at(54.15, -4.48), { code: 'IM', parent: 'GB' });
    assert.deepEqual(borders.at(30, -40), { code: null, parent: null });
  });
});
