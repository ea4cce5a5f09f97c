import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { dialects, type TestDatabase } from '../../../test/helpers/databases.ts';
import { osmDir } from '../../../test/helpers/osm.ts';
import { runTool } from '../../../test/helpers/tools.ts';
import { loadEnricher } from './enricher.ts';
import { runImport } from './import.service.ts';
import { readOsmChange } from './readers/osm-change.ts';

/**
 * Change files made the way OpenStreetMap makes them: a real extract (Monaco), a second version of it
 * edited line by line in osmium's OPL text format (versions bumped, as an edit on the server bumps them),
 * and `osmium derive-changes` between the two. Applying the change file to the first version must give
 * the catalog that importing the second version gives.
 */

/** One OPL line: `n123 v4 dV c0 t… i0 u Tk=v,k2=v2 x7.4 y43.7` (ways: `Nn1,n2`; relations: `Mw5@outer,…`). */
interface OplObject {
  kind: 'n' | 'w' | 'r';
  id: number;
  fields: Map<string, string>;
  tags: Map<string, string>;
}

const unescapeOpl = (s: string) => s.replace(/%([0-9a-fA-F]+)%/g, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)));
const escapeOpl = (s: string) => s.replace(/[\s,=%@]/gu, (c) => `%${c.codePointAt(0)!.toString(16)}%`);

function parseOpl(line: string): OplObject {
  const [head, ...rest] = line.split(' ');
  const fields = new Map(rest.map((f) => [f[0]!, f.slice(1)] as const));
  const tags = new Map<string, string>();
  for (const pair of (fields.get('T') ?? '').split(',').filter(Boolean)) {
    const at = pair.indexOf('=');
    tags.set(unescapeOpl(pair.slice(0, at)), unescapeOpl(pair.slice(at + 1)));
  }
  return { kind: head![0] as OplObject['kind'], id: Number(head!.slice(1)), fields, tags };
}

function writeOpl(o: OplObject): string {
  const fields = new Map(o.fields);
  fields.set('T', [...o.tags].map(([k, v]) => `${escapeOpl(k)}=${escapeOpl(v)}`).join(','));
  return `${o.kind}${o.id} ${[...fields].map(([k, v]) => `${k}${v}`).join(' ')}`;
}

/** The next version of an object, as an edit would leave it. */
function bump(o: OplObject): void {
  o.fields.set('v', String(Number(o.fields.get('v') ?? '1') + 1));
}

interface Edit {
  renamed: string;
  phoneChanged: string;
  deletedCafe: string;
  newBakery: string;
  /** A place way none of whose own fields changed: one of its nodes moved. */
  wayWithMovedNode: string;
  renamedWay: string;
  untaggedWay: string;
}

/** Writes v1.osm.pbf (the extract), v2.osm.pbf (edited) and change.osc.gz into `dir`. */
function makeVersions(dir: string): Edit {
  const v1 = join(dir, 'v1.opl');
  runTool('osmium', ['cat', '-O', '-f', 'opl', join(osmDir, 'monaco-2026.osm.pbf'), '-o', v1]);
  const objects = readFileSync(v1, 'utf8').trimEnd().split('\n').map(parseOpl);
  const named = (o: OplObject) => o.tags.has('name') && !o.tags.get('name')!.includes(';');
  const nodes = objects.filter((o) => o.kind === 'n');
  const ways = objects.filter((o) => o.kind === 'w');
  const wayNodes = new Set(ways.flatMap((w) => (w.fields.get('N') ?? '').split(',').map((r) => Number(r.slice(1)))));
  const poiNode = (key: string, value?: string) =>
    nodes.find(
      (o) => named(o) && !wayNodes.has(o.id) && (value === undefined ? o.tags.has(key) : o.tags.get(key) === value) && !used.has(o.id),
    )!;
  const used = new Set<number>();
  const take = <T extends OplObject>(o: T | undefined, what: string): T => {
    assert.ok(o, `the extract has ${what}`);
    used.add(o.id);
    return o;
  };

  const renamed = take(poiNode('shop'), 'a named shop');
  renamed.tags.set('name', `${renamed.tags.get('name')} Nouveau`);
  bump(renamed);
  const phoned = take(
    nodes.find((o) => named(o) && o.tags.has('phone') && o.tags.has('amenity') && !used.has(o.id)),
    'a place with a phone',
  );
  phoned.tags.set('phone', '+377 93 15 20 20');
  bump(phoned);
  const cafe = take(poiNode('amenity', 'cafe'), 'a café');

  const poiWays = ways.filter(
    (o) => named(o) && (o.tags.has('shop') || o.tags.has('amenity')) && (o.fields.get('N') ?? '').split(',').length >= 5,
  );
  const moving = take(poiWays[0], 'a place way');
  // A node of the way that no other way uses: it moves 50 m north, the way itself stays as it is.
  const refs = moving.fields
    .get('N')!
    .split(',')
    .map((r) => Number(r.slice(1)));
  const usage = new Map<number, number>();
  for (const w of ways)
    for (const r of new Set((w.fields.get('N') ?? '').split(','))) usage.set(Number(r.slice(1)), (usage.get(Number(r.slice(1))) ?? 0) + 1);
  const movedNodeId = refs.slice(1, -1).find((r) => usage.get(r) === 1)!;
  const movedNode = take(
    nodes.find((o) => o.id === movedNodeId),
    'a node of that way alone',
  );
  movedNode.fields.set('y', (Number(movedNode.fields.get('y')) + 0.00045).toFixed(7));
  bump(movedNode);
  const renamedWay = take(
    poiWays.find((o) => !used.has(o.id)),
    'a second place way',
  );
  renamedWay.tags.set('name', `${renamedWay.tags.get('name')} (rénové)`);
  bump(renamedWay);
  const untagged = take(
    poiWays.find((o) => !used.has(o.id) && o.tags.has('amenity') && !o.tags.has('shop')),
    'a third place way',
  );
  untagged.tags.delete('amenity');
  for (const key of ['healthcare', 'tourism', 'leisure', 'office', 'craft']) untagged.tags.delete(key);
  bump(untagged);

  const bakeryId = Math.max(...nodes.map((o) => o.id)) + 1;
  const bakery: OplObject = {
    kind: 'n',
    id: bakeryId,
    fields: new Map([
      ['v', '1'],
      ['d', 'V'],
      ['c', '0'],
      ['t', '2026-11-20T10:00:00Z'],
      ['i', '0'],
      ['u', ''],
      ['x', '7.4212000'],
      ['y', '43.7311000'],
    ]),
    tags: new Map([
      ['shop', 'bakery'],
      ['name', 'Boulangerie du Rocher'],
      ['phone', '+377 93 30 00 00'],
    ]),
  };
  const lastNode = objects.lastIndexOf(nodes.at(-1)!);
  const v2Objects = [...objects.slice(0, lastNode + 1), bakery, ...objects.slice(lastNode + 1)].filter((o) => o !== cafe);
  const v2 = join(dir, 'v2.opl');
  writeFileSync(v2, `${v2Objects.map(writeOpl).join('\n')}\n`);

  mkdirSync(join(dir, 'v2'));
  runTool('osmium', ['cat', '-O', v1, '-o', join(dir, 'monaco.osm.pbf')]);
  runTool('osmium', ['cat', '-O', v2, '-o', join(dir, 'v2', 'monaco.osm.pbf')]);
  runTool('osmium', ['derive-changes', '-O', v1, v2, '-o', join(dir, 'change.osc.gz')]);
  return {
    renamed: `n${renamed.id}`,
    phoneChanged: `n${phoned.id}`,
    deletedCafe: `n${cafe.id}`,
    newBakery: `n${bakeryId}`,
    wayWithMovedNode: `w${moving.id}`,
    renamedWay: `w${renamedWay.id}`,
    untaggedWay: `w${untagged.id}`,
  };
}

interface PlaceState {
  public_id: string;
  name: string;
  phone_e164: string | null;
  lat: number | null;
  lon: number | null;
  city: string | null;
  content_hash: string;
  closed_reason: string | null;
  closed_at: string | null;
  updated_at: string;
}

async function placesOf(database: TestDatabase): Promise<Map<string, PlaceState>> {
  const rows = await database.db.kysely
    .selectFrom('places')
    .select([
      'source_id',
      'public_id',
      'name',
      'phone_e164',
      'lat',
      'lon',
      'city',
      'content_hash',
      'closed_reason',
      'closed_at',
      'updated_at',
    ])
    .where('source', '=', 'osm')
    .execute();
  return new Map(rows.map(({ source_id, ...rest }) => [source_id, rest]));
}

/** What an import determines of a place, whichever way it arrived (not when). */
const content = (p: PlaceState | undefined) =>
  p && {
    public_id: p.public_id,
    name: p.name,
    phone_e164: p.phone_e164,
    lat: p.lat,
    lon: p.lon,
    city: p.city,
    content_hash: p.content_hash,
  };

let dir: string;
let edit: Edit;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'osm-change-'));
  edit = makeVersions(dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('the derived change file holds each kind of edit', async () => {
  const change = await readOsmChange(join(dir, 'change.osc.gz'));
  const id = (s: string) => Number(s.slice(1));
  assert.equal(change.nodes.get(id(edit.renamed))?.action, 'modify');
  assert.equal(change.nodes.get(id(edit.deletedCafe))?.action, 'delete');
  assert.equal(change.nodes.get(id(edit.newBakery))?.action, 'create');
  assert.equal(change.ways.get(id(edit.untaggedWay))?.action, 'modify');
  assert.equal(change.ways.has(id(edit.wayWithMovedNode)), false, 'the way whose node moved is not in the file');
});

for (const { name: dialect, open } of dialects) {
  describe(`an OpenStreetMap change file applied to the extract it changes (${dialect})`, { timeout: 180_000 }, () => {
    let changed: TestDatabase;
    let snapshot: TestDatabase;
    let before1: Map<string, PlaceState>;
    let applied: Awaited<ReturnType<typeof runImport>>;

    before(async () => {
      [changed, snapshot] = [await open('prepared'), await open('prepared')];
      await runImport(changed.db, loadEnricher(), join(dir, 'monaco.osm.pbf'));
      await runImport(snapshot.db, loadEnricher(), join(dir, 'v2', 'monaco.osm.pbf'));
      before1 = await placesOf(changed);
      applied = await runImport(changed.db, loadEnricher(), join(dir, 'change.osc.gz'));
    });
    after(async () => {
      await changed?.dispose();
      await snapshot?.dispose();
    });

    test('applies to the one OpenStreetMap dataset, as a run of its own that retires only what it deleted or untagged', async () => {
      assert.equal(applied.format, 'osm-change');
      assert.equal(applied.dataset, 'monaco');
      assert.equal(applied.retired_count, 2, 'the café and the untagged way');
      assert.equal(applied.imported_count, 1, 'the bakery');
      assert.ok(applied.updated_count >= 4, `renamed, new phone, moved way, renamed way: ${applied.updated_count}`);
    });

    test('each change is in the catalog: renamed, new phone, new bakery, moved and renamed ways, with their ids kept', async () => {
      const after1 = await placesOf(changed);
      assert.match(after1.get(edit.renamed)!.name, / Nouveau$/);
      assert.equal(after1.get(edit.renamed)!.public_id, before1.get(edit.renamed)!.public_id);
      assert.equal(after1.get(edit.phoneChanged)!.phone_e164, '+37793152020');
      assert.equal(after1.get(edit.newBakery)!.name, 'Boulangerie du Rocher');
      assert.equal(after1.get(edit.newBakery)!.closed_reason, null);
      assert.match(after1.get(edit.renamedWay)!.name, /\(rénové\)$/);
      const moved = after1.get(edit.wayWithMovedNode)!;
      assert.ok(moved.lat! > before1.get(edit.wayWithMovedNode)!.lat!, 'the way moved north with its node');
      assert.equal(moved.lon, before1.get(edit.wayWithMovedNode)!.lon);
      for (const gone of [edit.deletedCafe, edit.untaggedWay]) {
        assert.equal(after1.get(gone)!.closed_reason, 'retired', gone);
        assert.ok(after1.get(gone)!.closed_at, gone);
      }
    });

    test('gives the catalog that importing the edited extract gives', async () => {
      const viaChanges = await placesOf(changed);
      const viaSnapshot = await placesOf(snapshot);
      const open = (m: Map<string, PlaceState>) =>
        [...m]
          .filter(([, p]) => p.closed_reason === null)
          .map(([id]) => id)
          .sort();
      assert.deepEqual(open(viaChanges), open(viaSnapshot));
      for (const id of open(viaSnapshot)) assert.deepEqual(content(viaChanges.get(id)), content(viaSnapshot.get(id)), id);
    });

    test('applying the same change file again changes nothing', async () => {
      const once = await placesOf(changed);
      const again = await runImport(changed.db, loadEnricher(), join(dir, 'change.osc.gz'));
      assert.equal(again.imported_count, 0);
      assert.equal(again.updated_count, 0);
      assert.equal(again.retired_count, 0);
      assert.deepEqual(await placesOf(changed), once);
    });

    test('a re-import of the extract itself still retires what it no longer holds', async () => {
      const summary = await runImport(snapshot.db, loadEnricher(), join(dir, 'monaco.osm.pbf'));
      assert.equal(summary.retired_count, 1, 'the bakery, which the first version does not have');
      const places = await placesOf(snapshot);
      assert.equal(places.get(edit.newBakery)!.closed_reason, 'retired');
      assert.equal(places.get(edit.deletedCafe)!.closed_reason, null, 'the café is back');
    });
  });
}

describe('change files that cannot be applied', () => {
  let database: TestDatabase;
  before(async () => {
    database = await dialects[0]!.open('prepared');
  });
  after(async () => database?.dispose());

  test('a catalog without an OpenStreetMap extract says to import one first', async () => {
    await assert.rejects(
      runImport(database.db, loadEnricher(), join(dir, 'change.osc.gz')),
      (error: Error & { extras?: { errors?: Array<{ field: string }> } }) => {
        assert.match(error.message, /import the extract \(\.osm\.pbf\) first/);
        assert.equal(error.extras?.errors?.[0]?.field, 'dataset');
        return true;
      },
    );
  });

  test('several OpenStreetMap datasets: the error lists them for --dataset, which must name one of them', async () => {
    await runImport(database.db, loadEnricher(), join(osmDir, 'monaco-2026.osm.pbf'));
    await runImport(database.db, loadEnricher(), join(osmDir, 'porto-2020.osm.pbf'));
    await assert.rejects(
      runImport(database.db, loadEnricher(), join(dir, 'change.osc.gz')),
      (error: Error & { extras?: { errors?: Array<{ allowed?: string[] }> } }) => {
        assert.deepEqual(error.extras?.errors?.[0]?.allowed, ['monaco-2026', 'porto-2020']);
        return true;
      },
    );
    const summary = await runImport(database.db, loadEnricher(), join(dir, 'change.osc.gz'), { dataset: 'monaco-2026' });
    assert.equal(summary.dataset, 'monaco-2026');
    await assert.rejects(
      runImport(database.db, loadEnricher(), join(dir, 'change.osc.gz'), { dataset: 'monaco' }),
      (error: Error & { extras?: { errors?: Array<{ field: string; allowed?: string[] }> } }) => {
        assert.deepEqual(error.extras?.errors?.[0], {
          field: 'dataset',
          message: 'not an imported dataset',
          allowed: ['monaco-2026', 'porto-2020'],
        });
        return true;
      },
    );
  });

  test('broken XML fails with the file named and nothing written', async () => {
    const broken = join(dir, 'broken.osc.gz');
    writeFileSync(broken, gzipSync('<osmChange version="0.6"><modify><node id="1" lat="43.7" lon="7.4"><tag k="shop" v="x"/></modify>'));
    const runs = await database.db.kysely.selectFrom('import_runs').select('id').execute();
    await assert.rejects(
      runImport(database.db, loadEnricher(), broken, { dataset: 'monaco-2026' }),
      /broken\.osc\.gz is not a readable OpenStreetMap change file/,
    );
    assert.equal((await database.db.kysely.selectFrom('import_runs').select('id').execute()).length, runs.length);
  });
});
