import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { copyTestSqlite, type TestSqlite } from '../../../test/helpers/databases.ts';
import { osmDir } from '../../../test/helpers/osm.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { createReadPool } from '../../infra/db/read-pool.ts';
import { createReadTasks, readTasksModule } from '../search/read-tasks.ts';
import { quickSearch } from '../search/search.service.ts';
import { createSearch } from '../search/search.ts';
import type { SearchDeps, SearchInput } from '../search/search.types.ts';
import { runImport } from './import.service.ts';

/**
 * Country and city of real places at the borders of Monaco (France), Liechtenstein (Switzerland, Austria)
 * and in Porto and Vila Nova de Gaia, imported from the real extracts. The places were picked by checking
 * their points against the OpenStreetMap boundary relations of Monaco and Liechtenstein in the same files.
 */
describe('country and city at borders and in small places, on the real extracts', () => {
  let t: TestSqlite;
  let deps: SearchDeps;
  before(async () => {
    t = await copyTestSqlite('prepared');
    for (const file of ['monaco-2026.osm.pbf', 'liechtenstein-2024.osm.pbf', 'porto-2020.osm.pbf'])
      await runImport(t.db, loadEnricher(), join(osmDir, file));
    deps = createSearch(t.db, createReadPool({ db: t.db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));
  });
  after(async () => t.dispose());

  const place = (sourceId: string) => {
    const row = t.db
      .sqlite!.prepare(
        `SELECT p.name, p.country_code, p.city, p.city_source, c.name AS filed, c.country_code AS filed_country
         FROM places p LEFT JOIN cities c ON c.id = p.city_id WHERE p.source = 'osm' AND p.source_id = ?`,
      )
      .get(sourceId) as
      | { name: string; country_code: string; city: string | null; city_source: string; filed: string | null; filed_country: string | null }
      | undefined;
    assert.ok(row, `${sourceId} was imported`);
    return row;
  };
  /** Name, country, the GeoNames city it is filed under and that city's country. */
  const where = (sourceId: string) => {
    const p = place(sourceId);
    return [p.name, p.country_code, p.filed, p.filed_country];
  };

  test('files places in Monaco without an address under Monaco, not under Beausoleil next door', () => {
    // Before, the nearest GeoNames point with its reach (Beausoleil, 13,000 people) took them, and France with it.
    assert.deepEqual(where('n7815408085'), ['Loga Café', 'MC', 'Monaco', 'MC']);
    assert.deepEqual(where('n7926333300'), ['Trinity Irish Bar', 'MC', 'Monaco', 'MC']);
    assert.deepEqual(where('n11961629795'), ['Le Bar Américain', 'MC', 'Monaco', 'MC']);
  });

  test('files a hotel just across the border in Cap-d’Ail under France, whatever its name says', () => {
    assert.deepEqual(where('n2671854127'), ['Marriott Hotel Riviera Monaco', 'FR', "Cap-d'Ail", 'FR']);
  });

  test('lets the address city decide a few metres from the border, where the generalised polygon is on the wrong side', () => {
    // Newteon, addr:city Monaco, no addr:country: inside Monaco by OSM's boundary, in France by country-coder's.
    const p = place('n4948361327');
    assert.deepEqual([p.country_code, p.filed, p.city_source], ['MC', 'Monaco', 'address']);
  });

  test('files places in Liechtenstein by the Rhine under Liechtenstein, not under the Swiss town across it', () => {
    assert.deepEqual(where('n6255941921'), ['b_smart hotel', 'LI', 'Eschen', 'LI']);
    assert.deepEqual(where('n11381640081'), ['Rhistaurant', 'LI', 'Eschen', 'LI']);
    assert.deepEqual(where('n4788724038'), ['Hotel Engel', 'LI', 'Vaduz', 'LI']);
  });

  test('keeps the source’s country within the border tolerance', () => {
    // Pfälzerhütte, addr:country LI, on the Austrian border: country-coder puts its point 8 m into Austria.
    assert.deepEqual([...where('w145395030'), place('w145395030').city_source], ['Pfälzerhütte', 'LI', 'Triesenberg', 'LI', 'address']);
  });

  test('files the Swiss and Austrian places of the Liechtenstein extract under their own countries', () => {
    // Before, both were filed under Balzers and Triesenberg, Liechtenstein.
    assert.deepEqual(where('n9776468066'), ['Eine Fischtreppe in den Saarkanal', 'CH', 'Sevelen', 'CH']);
    assert.deepEqual(where('w1127972619'), ['Pflanzenschutzgebiet Nenzinger Himmel', 'AT', 'Brand', 'AT']);
  });

  test('keeps Porto and Vila Nova de Gaia apart on either bank of the Douro', () => {
    assert.deepEqual(where('n3645311727'), ['The Yeatman', 'PT', 'Vila Nova de Gaia', 'PT']);
    assert.deepEqual(where('n1487261810'), ['Café Cocos', 'PT', 'Vila Nova de Gaia', 'PT']);
    assert.equal(place('n1487261810').city_source, 'nearest');
  });

  const search = (input: SearchInput) => quickSearch(deps, { ...input, per_page: 20 }, { lang: null, location: 'querystring' });

  test('finds places of villages GeoNames does not list with city= the name their addresses give', async () => {
    // Nendeln, Schaanwald and Malbun have no GeoNames entry of 1,000+ people; the places written with them
    // are filed under the Liechtenstein city of their point, which city= resolves to.
    for (const [city, query, name, filed] of [
      ['Nendeln', 'Weinstube', 'Restaurant Weinstube', 'Planken'],
      ['Schaanwald', 'Casino', 'Casino Schaanwald Liechtenstein', 'Mauren'],
      ['malbun', 'Falknerei', 'Falknerei Galina', 'Triesenberg'],
    ] as const) {
      const r = await search({ city, query });
      assert.ok(
        r.page.rows.some((p) => p.name === name),
        `${city}: ${r.page.rows.map((p) => p.name).join(', ')}`,
      );
      assert.deepEqual(
        [r.resolution.city?.chosen.name, r.resolution.city?.chosen.country, r.resolution.city?.chosen_by],
        [filed, 'LI', 'address'],
      );
    }
  });

  test('resolves every address city written in these extracts with city=, in capitals and without accents', async () => {
    const written = t.db
      .sqlite!.prepare(
        `SELECT city, city_source, json_group_array(DISTINCT city_id) AS filed FROM places
         WHERE source = 'osm' AND city_source IN ('address', 'address_unmatched') GROUP BY city, city_source`,
      )
      .all() as Array<{ city: string; city_source: string; filed: string }>;
    assert.ok(written.length >= 20 && written.some((w) => w.city_source === 'address_unmatched'), `${written.length} names`);
    const plain = (v: string) => v.normalize('NFD').replace(/\p{M}/gu, '').toUpperCase();
    for (const w of written) {
      const r = await search({ city: plain(w.city) });
      assert.ok(r.total > 0, `${w.city}: no place`);
      // A name GeoNames does not know goes to a city where the places written with it are filed.
      if (w.city_source === 'address_unmatched')
        assert.ok((JSON.parse(w.filed) as number[]).includes(r.resolution.city!.chosen.id), `${w.city}: ${r.resolution.city?.chosen.name}`);
    }
  });

  test('finds a Monaco café with city=Monaco, and with an exonym of it', async () => {
    for (const city of ['Monaco', 'Mónaco', 'MONACO']) {
      const r = await search({ city, query: 'Loga' });
      assert.deepEqual(
        r.page.rows.map((p) => p.name),
        ['Loga Café'],
        city,
      );
    }
  });
});
