import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Db } from '../../src/infra/db/database.ts';
import type { MatchRecordInput, MatchResult } from '../../src/modules/match/match.schema.ts';
import { runnerUpMargin } from '../../src/modules/match/match.service.ts';

/** One record of bench/data/match-labelled.ndjson (built by scripts/build-match-set.ts). */
export interface LabelledRecord {
  ref: string;
  combo: 'name+city' | 'name+phone' | 'name+address' | 'name+coordinates';
  extract: string;
  expected: string | null;
  held_out: string | null;
  record: Omit<MatchRecordInput, 'ref'>;
}

export const combos = ['name+city', 'name+phone', 'name+address', 'name+coordinates'] as const;

export function loadLabelledSet(
  extracts?: readonly string[],
  file: string | URL = new URL('../../bench/data/match-labelled.ndjson', import.meta.url),
): LabelledRecord[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as LabelledRecord)
    .filter((r) => !extracts || extracts.includes(r.extract));
}

/**
 * The catalog of the set: the OSM extracts' POIs (../shared/data/osm/osm-pois-all.ndjson.gz) of the given
 * extracts, less the businesses the set holds out, as an NDJSON file the importer reads.
 */
export function writeCatalog(set: readonly LabelledRecord[], extracts: readonly string[]): string {
  const heldOut = new Set(set.flatMap((r) => (r.held_out ? [r.held_out] : [])));
  const lines = gunzipSync(readFileSync(new URL('../../../shared/data/osm/osm-pois-all.ndjson.gz', import.meta.url)))
    .toString('utf8')
    .split('\n')
    .filter((l) => {
      if (l.trim() === '') return false;
      const p = JSON.parse(l) as { id: string; extract: string };
      return extracts.includes(p.extract) && !heldOut.has(p.id);
    });
  const path = join(mkdtempSync(join(tmpdir(), 'leadatlas-match-set-')), 'catalog.osm.ndjson');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** OSM id (`n123`) of each public place id of the catalog. */
export async function osmIdsOf(db: Db): Promise<Map<string, string>> {
  const rows = await db.kysely.selectFrom('places').select(['public_id', 'source_id']).execute();
  return new Map(rows.map((r) => [r.public_id, r.source_id]));
}

export interface Counts {
  tp: number;
  fp: number;
  positives: number;
}
export const precision = (c: Counts): number => (c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp));
export const recall = (c: Counts): number => (c.positives === 0 ? 1 : c.tp / c.positives);

/**
 * Precision and recall at a threshold, from results matched at threshold 0 (their candidates carry the scores):
 * the decision is the service's, the best candidate at or above the threshold and `runnerUpMargin` above the
 * runner-up. A match of a held-out business is a false positive, as is a match to another place than expected.
 */
export function countsAt(
  set: readonly LabelledRecord[],
  results: readonly MatchResult[],
  osmIds: Map<string, string>,
  threshold: number,
  filter: (r: LabelledRecord) => boolean = () => true,
): Counts & { misses: string[]; wrong: string[] } {
  const c = { tp: 0, fp: 0, positives: 0, misses: [] as string[], wrong: [] as string[] };
  set.forEach((r, i) => {
    if (!filter(r)) return;
    if (r.expected) c.positives++;
    const [best, second] = results[i]!.candidates;
    const matched = best && best.score >= threshold && (!second || best.score - second.score >= runnerUpMargin - 1e-9) ? best : null;
    if (!matched) {
      if (r.expected) c.misses.push(r.ref);
      return;
    }
    if (r.expected && osmIds.get(matched.id) === r.expected) c.tp++;
    else {
      c.fp++;
      c.wrong.push(`${r.ref} → ${osmIds.get(matched.id)} (${matched.score})`);
    }
  });
  return c;
}
