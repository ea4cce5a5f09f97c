import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { osmDir, poiFilter } from '../../../../test/helpers/osm.ts';
import { requireTool, runTool } from '../../../../test/helpers/tools.ts';
import { AppError } from '../../../infra/errors.ts';
import type { ReadResult } from '../importer.types.ts';
import { OsmPbfReader } from './osm-pbf.ts';
import { IdSetBuilder, NodeLocations, PointSum } from './osm-pbf-locations.ts';

async function readAll(path: string): Promise<{ results: ReadResult[]; reader: OsmPbfReader }> {
  const reader = new OsmPbfReader(path, statSync(path).size, 'osm');
  const results: ReadResult[] = [];
  for await (const r of reader.records()) results.push(r);
  return { results, reader };
}

const osmium = (...args: string[]) => runTool('osmium', args, { maxBuffer: 1 << 28 }).toString();

/** The objects of an OPL listing: `w12 … Nn1,n2` (way nodes) and `r3 … Mw4@outer,n5@` (relation members). */
function parseOpl(opl: string): Array<{ id: string; tags: string; nodes: string[]; members: string[] }> {
  return opl
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(' ');
      const field = (c: string) => fields.find((f) => f.startsWith(c))?.slice(1) ?? '';
      const list = (c: string) => field(c).split(',').filter(Boolean);
      return { id: fields[0]!, tags: field('T'), nodes: list('N'), members: list('M').map((m) => m.split('@')[0]!) };
    });
}

/**
 * What the import needs located, computed with osmium alone: the nodes of the named POI ways, the member
 * nodes of the named POI relations and the nodes of their member ways; and those member ways.
 */
function locatedByOsmium(file: string): { nodes: number; memberWays: number } {
  const dir = mkdtempSync(join(tmpdir(), 'osm-located-'));
  try {
    const pois = join(dir, 'pois.osm.pbf');
    const named = join(dir, 'named.osm.pbf');
    osmium('tags-filter', '-R', '-O', '-o', pois, file, poiFilter);
    osmium('tags-filter', '-R', '-O', '-o', named, pois, 'nwr/name');
    // A blank name does not make a place (nor a point worth computing).
    const objects = parseOpl(osmium('cat', '-f', 'opl', named)).filter((o) => !/(^|,)name=(%20%)*(,|$)/.test(o.tags));
    const nodes = new Set<string>();
    const memberWays = new Set<string>();
    for (const o of objects) {
      for (const n of o.nodes) nodes.add(n);
      for (const m of o.members) {
        if (m.startsWith('n')) nodes.add(m);
        else if (m.startsWith('w')) memberWays.add(m);
      }
    }
    if (memberWays.size > 0) {
      const ids = join(dir, 'ways.txt');
      execFileSync('sh', ['-c', `cat > ${ids}`], { input: [...memberWays].join('\n') });
      // Exit status 1: some member ways lie outside the extract (the listing has the others).
      const found = spawnSync(requireTool('osmium'), ['getid', '-f', 'opl', '-i', ids, file], { maxBuffer: 1 << 28, encoding: 'utf8' });
      assert.ok(found.status === 0 || found.status === 1, found.stderr);
      for (const way of parseOpl(found.stdout)) for (const n of way.nodes) nodes.add(n);
    }
    return { nodes: nodes.size, memberWays: memberWays.size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the .osm.pbf reader keeps only what the places need', () => {
  // Andorra and Liechtenstein declare Sort.Type_then_ID (Geofabrik); Malta (2018) does not.
  for (const [name, sorted] of [
    ['andorra-2026', true],
    ['liechtenstein-2024', true],
    ['malta-2018', false],
  ] as const) {
    test(`${name}: locates exactly the nodes and member ways that osmium lists for the named POIs`, async () => {
      const file = join(osmDir, `${name}.osm.pbf`);
      const { reader } = await readAll(file);
      const expected = locatedByOsmium(file);
      assert.deepEqual(
        { nodes: reader.gathered?.nodes, memberWays: reader.gathered?.memberWays, sorted: reader.gathered?.sorted },
        { ...expected, sorted },
      );
      // Of 318,592–490,035 nodes in these extracts, a few percent are needed.
      const nodes = Number(osmium('fileinfo', '-e', '-g', 'data.count.nodes', file));
      assert.ok(expected.nodes < 0.05 * nodes, `${expected.nodes} of ${nodes}`);
    });
  }

  test('a file declared sorted and the same file undeclared give the same places', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osm-sorted-'));
    try {
      const undeclared = join(osmDir, 'malta-2018.osm.pbf');
      const declared = join(dir, 'malta-sorted.osm.pbf');
      osmium('cat', '-O', '--output-header=sorting=Type_then_ID', '-o', declared, undeclared);
      const a = await readAll(undeclared);
      const b = await readAll(declared);
      assert.equal(a.reader.gathered?.sorted, false);
      assert.equal(b.reader.gathered?.sorted, true);
      assert.ok(a.results.filter((r) => r.ok).length > 3000);
      assert.deepEqual(b.results, a.results);
      assert.equal(b.reader.bytesRead(), b.reader.totalBytes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('refuses a file whose header claims an order its blocks do not have, naming the fix', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osm-unsorted-'));
    try {
      // `osmium cat` of two extracts keeps each one's nodes, ways, relations in turn: not sorted overall.
      const lying = join(dir, 'two.osm.pbf');
      osmium(
        'cat',
        '-O',
        '--output-header=sorting=Type_then_ID',
        '-o',
        lying,
        join(osmDir, 'monaco-2026.osm.pbf'),
        join(osmDir, 'andorra-2026.osm.pbf'),
      );
      await assert.rejects(
        readAll(lying),
        (e: unknown) => e instanceof AppError && e.code === 'validation_failed' && /osmium sort/.test(e.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the id set and the location store', () => {
  test('gathers ids given in any order and repeated, across several merges, into one sorted set', () => {
    const builder = new IdSetBuilder();
    const expected = new Set<number>();
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    // 3 million additions from ~2 million ids beyond 32 bits: the first batch (2^20) fills three times.
    for (let i = 0; i < 3_000_000; i++) {
      const id = 10_000_000_000 + (random() % 2_000_000);
      builder.add(id);
      expected.add(id);
    }
    const set = builder.finish();
    assert.equal(set.length, expected.size);
    assert.deepEqual(
      [...set],
      [...expected].sort((a, b) => a - b),
    );
  });

  test('keeps the points of wanted nodes only, in file order or not, and skips nodes the file lacks', () => {
    const locations = new NodeLocations(Float64Array.from([3, 5, 8, 13]));
    for (const id of [1, 2, 3, 4, 5, 6, 7, 9, 13]) locations.offer(id, id / 10, -id / 10);
    locations.offer(8, 0.8, -0.8); // after a larger id: looked up again from the start
    const sum = new PointSum();
    for (const id of [3, 5, 8, 13, 21]) locations.addTo(sum, id);
    assert.equal(sum.count, 4);
    assert.equal(sum.lat, 0.3 + 0.5 + 0.8 + 1.3);
    assert.equal(sum.lon, -0.3 - 0.5 - 0.8 - 1.3);
    assert.equal(locations.offer(4, 0, 0), false);
  });
});
