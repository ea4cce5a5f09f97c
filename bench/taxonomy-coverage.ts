/**
 * Share of places the classifier maps onto the taxonomy, per source, on the real sample files, and the
 * classification cost per place (a warm cache, as in a long import).
 *   node --import tsx bench/taxonomy-coverage.ts [/work/shared/data] [--unmapped]
 */
import { resolve } from 'node:path';
import { readSourceSamples } from '../src/modules/taxonomy/taxonomy.samples.ts';
import { loadClassifier } from '../src/modules/taxonomy/taxonomy.ts';

const args = process.argv.slice(2);
const dataDir = resolve(args.find((a) => !a.startsWith('--')) ?? '../shared/data');
const showUnmapped = args.includes('--unmapped');
const classifier = loadClassifier();

for (const sample of readSourceSamples(dataDir)) {
  const places = sample.places.map((p, i) => ({ sourceId: String(i), name: 'x', ...p }));
  let mapped = 0;
  let withCategories = 0;
  const unmapped = new Map<string, number>();
  for (const place of places) {
    if (place.sourceCategories.length > 0 || place.osmTags) withCategories++;
    if (classifier.classify(sample.source, place).length > 0) mapped++;
    else for (const c of place.sourceCategories) unmapped.set(c, (unmapped.get(c) ?? 0) + 1);
  }
  const rounds = Math.max(1, Math.ceil(200_000 / places.length));
  const start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) for (const place of places) classifier.classify(sample.source, place);
  const usPerPlace = Number(process.hrtime.bigint() - start) / 1000 / (rounds * places.length);
  const pct = (n: number, d: number) => `${((100 * n) / d).toFixed(1)}%`;
  console.log(
    `${sample.source.padEnd(9)} ${sample.file}: ${mapped}/${places.length} mapped (${pct(mapped, places.length)}; ` +
      `${pct(mapped, withCategories)} of those with a category), ${usPerPlace.toFixed(2)} µs/place`,
  );
  if (showUnmapped) {
    const top = [...unmapped].sort((a, b) => b[1] - a[1]).slice(0, 25);
    console.log(`  unmapped: ${top.map(([t, n]) => `${t} (${n})`).join(', ')}`);
  }
}
