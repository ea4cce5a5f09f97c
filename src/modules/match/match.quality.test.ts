import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import {
  countsAt,
  type LabelledRecord,
  loadLabelledSet,
  osmIdsOf,
  precision,
  recall,
  writeCatalog,
} from '../../../test/helpers/match-labelled-set.ts';
import { createPlaceNameResolver } from '../search/type-resolver.ts';
import { defaultMatchThreshold, type MatchResult } from './match.schema.ts';
import { matchDepsOf, matchRecords } from './match.service.ts';

/**
 * A sample of the labelled set (bench/data/match-labelled.ndjson; the whole set: bench/match-quality.ts): the
 * records of three extracts, matched against those extracts imported without the businesses the set holds
 * out. Precision and recall must stay at the targets (98 % and 90 %; docs/matching.md, "Measured").
 */
const extracts = ['munich-center-2020', 'monaco-2026', 'liechtenstein-2024'];
const minPrecision = 0.98;
const minRecall = 0.9;

describe('matching quality on a sample of the labelled set (Munich, Monaco, Liechtenstein)', () => {
  let t: TestApp;
  let set: LabelledRecord[];
  let results: MatchResult[];
  let osmIds: Map<string, string>;

  before(async () => {
    set = loadLabelledSet(extracts);
    t = await buildTestApp({ files: [writeCatalog(set, extracts)] });
    const resolver = createPlaceNameResolver(t.db);
    const deps = matchDepsOf({ db: t.db, places: () => resolver });
    results = [];
    for (let i = 0; i < set.length; i += 100) {
      results.push(
        ...(await matchRecords(
          deps,
          set.slice(i, i + 100).map((r) => ({ ref: r.ref, ...r.record })),
          { threshold: 0 },
        )),
      );
    }
    osmIds = await osmIdsOf(t.db);
  });
  after(async () => {
    await t?.close();
  });

  test('holds both kinds of record: businesses the catalog has and businesses of the same streets it does not', () => {
    assert.ok(set.filter((r) => r.expected).length >= 300);
    assert.ok(set.filter((r) => r.held_out).length >= 100);
  });

  test(`keeps precision at ${minPrecision * 100} % or more and recall at ${minRecall * 100} % or more at the default threshold`, () => {
    const c = countsAt(set, results, osmIds, defaultMatchThreshold);
    const p = precision(c);
    const r = recall(c);
    console.log(`precision ${(100 * p).toFixed(1)} %, recall ${(100 * r).toFixed(1)} % (tp ${c.tp}, fp ${c.fp}, positives ${c.positives})`);
    assert.ok(p >= minPrecision, `precision ${p}: ${c.wrong.join('; ')}`);
    assert.ok(r >= minRecall, `recall ${r}`);
  });
});
