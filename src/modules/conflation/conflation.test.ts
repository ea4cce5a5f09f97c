import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { dialects } from '../../../test/helpers/databases.ts';
import { loadEnricher } from '../../bootstrap.ts';
import { runImport } from '../importers/import.service.ts';
import type { Place, PlaceDetails } from '../places/places.schema.ts';

/**
 * Conflation in the import, end to end on real overlapping data: the Monaco OpenStreetMap extract and the
 * Michelin guide's Monaco restaurants (read from ../shared/data at run time, never committed). The pairs
 * come from the judged sample (test/fixtures/conflation/judged-pairs.csv): its Monaco matches must become
 * one place each, with both sources, and its Monaco non-matches (restaurants inside hotels, neighbours of
 * one group sharing a website) must stay apart, in either import order, through re-imports, a retirement
 * and a return, on SQLite and PostgreSQL.
 */

const repoRoot = resolve(import.meta.dirname, '../../..');
const monacoOsm = join(repoRoot, 'data/osm/monaco-2026.osm.pbf');
const michelinGz = resolve(repoRoot, '../shared/data/places/michelin-guide-2022-6510.csv.gz');
const judged = readFileSync(join(repoRoot, 'test/fixtures/conflation/judged-pairs.csv'), 'utf8');

interface Pair {
  michelin: string;
  osm: string;
  label: number;
}
const monacoPairs: Pair[] = (parseCsv(judged, { comment: '#', columns: true }) as Record<string, string>[])
  .filter((r: Record<string, string>) => r.a_source === 'michelin' && r.b_source === 'osm' && r.a_id!.includes('/monaco-region/'))
  .map((r: Record<string, string>) => ({ michelin: r.a_id!, osm: r.b_id!, label: Number(r.label) }));
const matches = monacoPairs.filter((p) => p.label === 1);
const nonMatches = monacoPairs.filter((p) => p.label === 0);

type Row = Record<string, string>;
const michelinRows: Row[] = parseCsv(gunzipSync(readFileSync(michelinGz)), { columns: true });
const monacoMichelin = michelinRows.filter((r) => r.Url!.includes('/monaco-region/'));
const header = Object.keys(michelinRows[0]!);

/** A snapshot of the Michelin Monaco dataset: the same file name in a directory of its own. */
function writeMichelin(dir: string, rows: Row[]): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'michelin-monaco.csv');
  writeFileSync(path, stringify(rows, { header: true, columns: header }));
  return path;
}

/** Monaco and its edges (`minLon,minLat,maxLon,maxLat`). */
const monacoBox = '7.40,43.72,7.45,43.76';

const grill = matches.find((p) => p.michelin.includes('/le-grill'))!;
const rampoldi = matches.find((p) => p.michelin.includes('rampoldi'))!;

for (const { name: database } of dialects) {
  describe(`conflation in the import: OpenStreetMap and Michelin in Monaco (${database})`, () => {
    let t: TestApp;
    let dir: string;
    let account: TestAccount;
    let michelinPath: string;

    const get = <T>(url: string): Promise<T> =>
      t.app.inject({ method: 'GET', url, headers: { authorization: account.authorization } }).then((r) => {
        assert.equal(r.statusCode, 200, r.body);
        return r.json<T>();
      });
    /** Every open place of Monaco, with the ids of its records. */
    const monaco = async (extra = ''): Promise<Place[]> => {
      const out: Place[] = [];
      let url: string | null = `/api/v2/map/search?bbox=${monacoBox}&per_page=100${extra}`;
      while (url) {
        const page: { data: Place[]; links: { next: string | null } } = await get(url);
        out.push(...page.data);
        url = page.links.next;
      }
      return out;
    };
    const placeOf = (places: Place[], source: string, sourceId: string) =>
      places.filter((p) => p.sources.some((s) => s.source === source && s.source_id === sourceId));
    const publicIdOfRecord = async (source: string, sourceId: string) =>
      (
        await t.db.kysely
          .selectFrom('places')
          .select('public_id')
          .where('source', '=', source)
          .where('source_id', '=', sourceId)
          .executeTakeFirstOrThrow()
      ).public_id;

    before(async () => {
      assert.ok(matches.length >= 4 && nonMatches.length >= 10, 'the judged sample has Monaco pairs of both kinds');
      dir = mkdtempSync(join(tmpdir(), 'leadatlas-conflation-'));
      michelinPath = writeMichelin(join(dir, 'v1'), monacoMichelin);
      t = await buildTestApp({ dialect: database, files: [monacoOsm] });
      account = await createAccountWithToken(t.db, { scopes: ['search', 'export', 'places:read'] });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    let osmFirstIds: Map<string, string>;

    test('importing a second source makes each business both describe one place with both sources', async () => {
      const before = await monaco();
      // What an OSM-only catalog shows and has exported: the account's leads of the OSM places.
      const exported = await get<{ search_id: string }>(`/api/v2/map/search?bbox=${monacoBox}&query=grill&per_page=1`);
      await t.app.inject({
        method: 'GET',
        url: `/api/v2/map/export?search_id=${exported.search_id}&format=json`,
        headers: { authorization: account.authorization },
      });
      const osmIds = new Map(await Promise.all(matches.map(async (p) => [p.osm, await publicIdOfRecord('osm', p.osm)] as const)));

      const summary = await runImport(t.db, loadEnricher(), michelinPath);
      assert.equal(summary.merged_count, matches.length, 'every judged match joined its OSM place, nothing else did');
      const after = await monaco();
      // Michelin's Monaco region may reach past the box: its records placed in it.
      const [w, s, e, n] = monacoBox.split(',').map(Number) as [number, number, number, number];
      const michelinInMonaco = monacoMichelin.filter(
        (r) => +r.Longitude! >= w && +r.Longitude! <= e && +r.Latitude! >= s && +r.Latitude! <= n,
      );
      assert.equal(after.length, before.length + michelinInMonaco.length - matches.length, 'each merged business counts once');
      osmFirstIds = new Map();
      for (const pair of matches) {
        const found = placeOf(after, 'michelin', pair.michelin);
        assert.equal(found.length, 1, `${pair.michelin}: one place`);
        const place = found[0]!;
        assert.deepEqual(place.sources.map((s) => s.source).sort(), ['michelin', 'osm'], `${pair.michelin}: both sources`);
        assert.ok(
          placeOf(after, 'osm', pair.osm).every((p) => p.id === place.id),
          `${pair.osm}: in the same place only`,
        );
        // The place keeps the public id the OSM place had (the first source), so links and leads survive.
        assert.equal(place.id, osmIds.get(pair.osm));
        assert.equal(place.source, 'osm', 'OpenStreetMap leads (the most trusted source)');
        osmFirstIds.set(pair.michelin, place.id);
      }
      for (const pair of nonMatches) {
        const m = placeOf(after, 'michelin', pair.michelin)[0];
        const o = placeOf(after, 'osm', pair.osm)[0];
        if (!m || !o) continue; // a record of the pair that is not an open place of Monaco (e.g. unnamed)
        assert.notEqual(m.id, o.id, `${pair.michelin} and ${pair.osm} are two businesses`);
      }
    });

    test('a search by either name finds the place once; its details say which source gave each field', async () => {
      const byMichelinName = await get<{ data: Place[] }>(
        `/api/v2/map/search?bbox=${monacoBox}&query=${encodeURIComponent("Table d'Antonio Salvatore")}`,
      );
      const byOsmName = await get<{ data: Place[] }>(`/api/v2/map/search?bbox=${monacoBox}&query=Rampoldi`);
      const id = osmFirstIds.get(rampoldi.michelin)!;
      assert.deepEqual(
        byMichelinName.data.filter((p) => p.sources.length > 1).map((p) => p.id),
        [id],
      );
      assert.equal(byOsmName.data.filter((p) => p.id === id).length, 1);
      assert.equal(byOsmName.data.filter((p) => p.sources.some((s) => s.source_id === rampoldi.michelin)).length, 1);
      const details = await get<PlaceDetails>(`/api/v1/places/${id}`);
      assert.equal(details.origin.source, 'osm');
      assert.equal(details.origin.source_id, rampoldi.osm);
      assert.equal(details.field_sources.name, 'osm');
      // OSM has no website for Rampoldi's restaurant; Michelin has: the place shows it, and says from where.
      const michelinRow = monacoMichelin.find((r) => r.Url === rampoldi.michelin)!;
      assert.equal(details.website, michelinRow.WebsiteUrl);
      assert.equal(details.field_sources.website, 'michelin');
      // The Michelin record's own public id answers with the place.
      const viaRecord = await get<PlaceDetails>(`/api/v1/places/${await publicIdOfRecord('michelin', rampoldi.michelin)}`);
      assert.equal(viaRecord.id, id);
    });

    test('exports and lead lists hold each business once, with its sources', async () => {
      const s = await get<{ search_id: string; total: number }>(`/api/v2/map/search?bbox=${monacoBox}&query=grill&include_closed=true`);
      const csv = await t.app.inject({
        method: 'GET',
        url: `/api/v2/map/export?search_id=${s.search_id}&format=csv`,
        headers: { authorization: account.authorization },
      });
      assert.equal(csv.statusCode, 200);
      const rows: Row[] = parseCsv(csv.body.replace(/^\uFEFF/, ''), { columns: true });
      assert.equal(rows.length, s.total);
      const grillRows = rows.filter((r) => r.sources!.includes(grill.michelin));
      assert.equal(grillRows.length, 1);
      assert.equal(grillRows[0]!.sources, `osm:${grill.osm};michelin:${grill.michelin}`);
      assert.equal(rows.filter((r) => r.sources!.includes(`osm:${grill.osm}`)).length, 1);
      const leads = await get<{ data: Array<{ id: string; sources: unknown }> }>('/api/v1/user-api/places?per_page=100');
      const ids = leads.data.map((l) => l.id);
      assert.equal(new Set(ids).size, ids.length, 'one lead per place');
      assert.ok(ids.includes(osmFirstIds.get(grill.michelin)!), 'the lead exported before the merge is the merged place');
    });

    test('re-importing either source changes nothing and keeps every public id', async () => {
      const before = await monaco();
      for (const file of [michelinPath, monacoOsm]) {
        const summary = await runImport(t.db, loadEnricher(), file);
        assert.equal(summary.imported_count + summary.updated_count + summary.merged_count + summary.retired_count, 0, file);
      }
      assert.deepEqual(await monaco(), before);
    });

    test('a record its source drops leaves the place with the others; back, it joins the same place again', async () => {
      const id = osmFirstIds.get(grill.michelin)!;
      const without = writeMichelin(
        join(dir, 'v2'),
        monacoMichelin.filter((r) => r.Url !== grill.michelin),
      );
      const summary = await runImport(t.db, loadEnricher(), without);
      assert.equal(summary.retired_count, 1);
      let place = placeOf(await monaco(), 'osm', grill.osm);
      assert.equal(place.length, 1);
      assert.equal(place[0]!.id, id);
      assert.deepEqual(place[0]!.sources, [{ source: 'osm', source_id: grill.osm }]);
      assert.equal(place[0]!.status, 'open');

      // Back as it was: the place has both sources again.
      assert.equal((await runImport(t.db, loadEnricher(), michelinPath)).updated_count, 1, 'back, unchanged');
      place = placeOf(await monaco(), 'michelin', grill.michelin);
      assert.equal(place.length, 1);
      assert.equal(place[0]!.id, id);
      assert.equal(place[0]!.sources.length, 2);

      // Dropped, then changed and back: the Michelin record returns with another website, which the place now shows.
      await runImport(t.db, loadEnricher(), without);
      const edited = monacoMichelin.map((r) => (r.Url === grill.michelin ? { ...r, WebsiteUrl: 'https://grill.example.mc/' } : r));
      await runImport(t.db, loadEnricher(), writeMichelin(join(dir, 'v3'), edited));
      place = placeOf(await monaco(), 'michelin', grill.michelin);
      assert.equal(place.length, 1);
      assert.equal(place[0]!.id, id);
      assert.equal(place[0]!.sources.length, 2);
      const details = await get<PlaceDetails>(`/api/v1/places/${id}`);
      // OSM's website leads where OSM has one (the SBM group's page for the Grill).
      assert.equal(details.field_sources.website, details.website === 'https://grill.example.mc/' ? 'michelin' : 'osm');

      // OSM drops it: the place is Michelin's alone, and keeps its id.
      const osmAlone = await t.db.kysely
        .selectFrom('places')
        .select('id')
        .where('source', '=', 'osm')
        .where('source_id', '=', grill.osm)
        .executeTakeFirstOrThrow();
      await t.db.kysely
        .updateTable('places')
        .set({ closed_reason: 'retired', closed_at: new Date().toISOString() })
        .where('id', '=', osmAlone.id)
        .execute();
      const { remergeChanged } = await import('./conflation.service.ts');
      assert.equal(await remergeChanged(t.db), 1);
      place = placeOf(await monaco(), 'michelin', grill.michelin);
      assert.equal(place[0]!.id, id);
      assert.deepEqual(
        place[0]!.sources.map((s) => s.source),
        ['michelin'],
      );
      assert.equal(place[0]!.website, 'https://grill.example.mc/');
    });
  });

  describe(`conflation in the import: the other order, Michelin first (${database})`, () => {
    let t: TestApp;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'leadatlas-conflation-'));
      t = await buildTestApp({ dialect: database, files: [writeMichelin(dir, monacoMichelin), monacoOsm] });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('the same businesses become one place, under the public id of the first source’s record, kept through re-imports', async () => {
      const places = async () =>
        t.db.kysely
          .selectFrom('places')
          .select(['public_id', 'sources', 'source'])
          .where('sources', 'is not', null)
          .orderBy('public_id')
          .execute();
      const merged = await places();
      assert.equal(merged.length, matches.length);
      for (const pair of matches) {
        const place = merged.find((p) => p.sources!.includes(JSON.stringify(pair.michelin)))!;
        assert.ok(place.sources!.includes(JSON.stringify(pair.osm)), `${pair.michelin}: with ${pair.osm}`);
        const michelinRecordId = (
          await t.db.kysely
            .selectFrom('places')
            .select('public_id')
            .where('source', '=', 'michelin')
            .where('source_id', '=', pair.michelin)
            .executeTakeFirstOrThrow()
        ).public_id;
        assert.equal(place.public_id, michelinRecordId.replace(/^rec:/, ''));
        assert.equal(place.source, 'osm', 'OpenStreetMap leads whichever came first');
      }
      await runImport(t.db, loadEnricher(), monacoOsm);
      await runImport(t.db, loadEnricher(), join(dir, 'michelin-monaco.csv'));
      assert.deepEqual(await places(), merged);
    });
  });
}
