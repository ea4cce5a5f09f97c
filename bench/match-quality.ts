// Quality of list matching (issue 32) on the labelled set (bench/data/match-labelled.ndjson, built from the
// OpenStreetMap extracts of ../shared/data by scripts/build-match-set.ts): precision and recall at the default
// threshold, the curve over thresholds, and the breakdown by the fields a record carries.
// Run: node --import tsx bench/match-quality.ts [--extracts a,b] [--set FILE] [--show-errors]
// `--set`: another set built the same way (scripts/build-match-set.ts --seed S --out FILE).
import { performance } from 'node:perf_hooks';
import { defaultMatchThreshold, type MatchResult } from '../src/modules/match/match.schema.ts';
import { matchDepsOf, matchRecords } from '../src/modules/match/match.service.ts';
import { createPlaceNameResolver } from '../src/modules/search/type-resolver.ts';
import { buildTestApp } from '../test/helpers/app.ts';
import { combos, countsAt, loadLabelledSet, osmIdsOf, precision, recall, writeCatalog } from '../test/helpers/match-labelled-set.ts';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const allExtracts = [
  'munich-center-2020',
  'porto-2020',
  'london-center-2020',
  'helsinki-center-2019',
  'monaco-2026',
  'liechtenstein-2024',
  'malta-2018',
  'andorra-2026',
];
const extracts = arg('--extracts')?.split(',') ?? allExtracts;

const set = loadLabelledSet(extracts, arg('--set'));
const t = await buildTestApp({ files: [writeCatalog(set, extracts)] });
try {
  const resolver = createPlaceNameResolver(t.db);
  const deps = matchDepsOf({ db: t.db, places: () => resolver });
  const started = performance.now();
  const results: MatchResult[] = [];
  for (let i = 0; i < set.length; i += 100) {
    const batch = set.slice(i, i + 100).map((r) => ({ ref: r.ref, ...r.record }));
    results.push(...(await matchRecords(deps, batch, { threshold: 0 })));
  }
  const ms = performance.now() - started;
  const osmIds = await osmIdsOf(t.db);
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  console.log(
    `${set.length} records (${set.filter((r) => r.expected).length} in the catalog, ${set.filter((r) => r.held_out).length} held out) of ${extracts.length} extracts, matched in ${ms.toFixed(0)} ms`,
  );
  const at = countsAt(set, results, osmIds, defaultMatchThreshold);
  console.log(
    `\nthreshold ${defaultMatchThreshold} (default): precision ${pct(precision(at))}, recall ${pct(recall(at))} (tp ${at.tp}, fp ${at.fp}, positives ${at.positives})`,
  );
  console.log('\n| threshold | precision | recall |\n| --- | --- | --- |');
  for (let th = 0.5; th <= 0.951; th += 0.05) {
    const c = countsAt(set, results, osmIds, th);
    console.log(`| ${th.toFixed(2)} | ${pct(precision(c))} | ${pct(recall(c))} |`);
  }
  console.log(
    `\nThe curve by the fields a record carries (precision / recall):\n\n| threshold | ${combos.join(' | ')} |\n| --- |${combos.map(() => ' --- |').join('')}`,
  );
  for (let th = 0.5; th <= 0.951; th += 0.05) {
    const cells = combos.map((combo) => {
      const c = countsAt(set, results, osmIds, th, (r) => r.combo === combo);
      return `${pct(precision(c))} / ${pct(recall(c))}`;
    });
    console.log(`| ${th.toFixed(2)} | ${cells.join(' | ')} |`);
  }
  console.log('\n| fields | records | held out | precision | recall |\n| --- | --- | --- | --- | --- |');
  for (const combo of combos) {
    const c = countsAt(set, results, osmIds, defaultMatchThreshold, (r) => r.combo === combo);
    const n = set.filter((r) => r.combo === combo);
    console.log(`| ${combo} | ${n.length} | ${n.filter((r) => r.held_out).length} | ${pct(precision(c))} | ${pct(recall(c))} |`);
  }
  if (argv.includes('--show-errors')) {
    const byRef = new Map(set.map((r, i) => [r.ref, { r, res: results[i]! }]));
    const show = (ref: string): string => {
      const x = byRef.get(ref)!;
      return `${ref} ${JSON.stringify(x.r.record)} best ${JSON.stringify(x.res.candidates.slice(0, 2).map((c) => [osmIds.get(c.id), c.score]))}`;
    };
    console.log('\nwrong matches:');
    for (const w of at.wrong) console.log(' ', show(w.split(' → ')[0]!), '→', w.split(' → ')[1]);
    console.log('\nmisses:');
    for (const m of at.misses) console.log(' ', show(m));
  }
} finally {
  await t.close();
}
