// Speed of match jobs (issue 32): rows a second of a batch job and its peak RSS. A CSV list of `--rows` rows
// (the labelled set's records, bench/data/match-labelled.ndjson, cycling) is read and matched the way a job
// does it (`openList` → `writeMatchedList`, batches of `--batch`), its result written to a file.
//
// The catalog is either the labelled set's (the 8 OpenStreetMap extracts of ../shared/data less the held-out
// businesses, about 16,000 places: the default) or an SQLite catalog file given with `--catalog` (the 1M-place
// bench catalog of bench/lib/catalog.ts, var/bench/catalog-v1-1000000.db). That catalog's resampled copies are
// written without blocking keys (they never went through an import's conflation), so the bench writes the keys
// of every place that has none first, once: the file is changed in place.
// Run: node --import tsx bench/match-speed.ts [--catalog FILE] [--rows 20000] [--batch 200] [--profile]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Db, openDatabase } from '../src/infra/db/database.ts';
import { blockingKeys } from '../src/modules/conflation/blocking.ts';
import { matchDepsOf } from '../src/modules/match/match.service.ts';
import { emptyCounts, writeMatchedList } from '../src/modules/match/match-jobs.runner.ts';
import { openList } from '../src/modules/match/match-lists.ts';
import { createPlaceNameResolver } from '../src/modules/search/type-resolver.ts';
import { buildTestApp } from '../test/helpers/app.ts';
import { loadLabelledSet, writeCatalog } from '../test/helpers/match-labelled-set.ts';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const rows = Number(arg('--rows') ?? 20_000);
const batchSize = Number(arg('--batch') ?? 200);
const catalogFile = arg('--catalog');

const extracts = [
  'munich-center-2020',
  'porto-2020',
  'london-center-2020',
  'helsinki-center-2019',
  'monaco-2026',
  'liechtenstein-2024',
  'malta-2018',
  'andorra-2026',
];
const set = loadLabelledSet(extracts);

/** Blocking keys for the places that have none (a resampled bench catalog's copies), in id batches. */
function writeMissingKeys(db: Db): number {
  const h = db.sqlite;
  if (!h) throw new Error('--catalog takes an SQLite catalog file');
  const select = h.prepare(
    `SELECT id, source, name, names, category, categories, phone_e164, website_domain, lat, lon, street, housenumber, address
       FROM places p WHERE id > ? AND merged_into IS NULL AND sources IS NULL
        AND NOT EXISTS (SELECT 1 FROM place_match_keys k WHERE k.place_id = p.id) ORDER BY id LIMIT 20000`,
  );
  const insert = h.prepare('INSERT INTO place_match_keys (key, place_id) VALUES (?, ?) ON CONFLICT (key, place_id) DO NOTHING');
  let after = 0;
  let written = 0;
  for (;;) {
    const batch = select.all(after) as Array<Record<string, unknown> & { id: number; categories: string }>;
    if (batch.length === 0) return written;
    h.transaction(() => {
      for (const r of batch) {
        const record = { ...r, categories: JSON.parse(r.categories || '[]') } as unknown as Parameters<typeof blockingKeys>[0];
        for (const key of blockingKeys(record)) insert.run(key, r.id);
      }
    })();
    written += batch.length;
    after = batch[batch.length - 1]!.id;
  }
}

const columns = ['Firma', 'Strasse', 'Hausnummer', 'Adresse', 'PLZ', 'Ort', 'Land', 'Telefon', 'Website', 'lat', 'lon'] as const;
const fieldOf: Record<(typeof columns)[number], string> = {
  Firma: 'name',
  Strasse: 'street',
  Hausnummer: 'housenumber',
  Adresse: 'address',
  PLZ: 'postcode',
  Ort: 'city',
  Land: 'country',
  Telefon: 'phone',
  Website: 'website',
  lat: 'lat',
  lon: 'lon',
};
const quote = (v: unknown): string => (v === undefined ? '' : `"${String(v).replaceAll('"', '""')}"`);

const dir = mkdtempSync(join(tmpdir(), 'leadatlas-match-speed-'));
const listPath = join(dir, 'list.csv');
const lines = [columns.join(',')];
for (let i = 0; i < rows; i++) {
  const r = set[i % set.length]!.record as Record<string, unknown>;
  lines.push(columns.map((c) => quote(r[fieldOf[c]])).join(','));
}
writeFileSync(listPath, `${lines.join('\n')}\n`);

let db: Db;
let close: () => Promise<void>;
if (catalogFile) {
  db = openDatabase(`sqlite:${catalogFile}`);
  close = async () => db.close();
  const started = performance.now();
  const written = writeMissingKeys(db);
  if (written > 0) console.log(`blocking keys written for ${written} places in ${((performance.now() - started) / 1000).toFixed(0)} s`);
} else {
  const t = await buildTestApp({ files: [writeCatalog(set, extracts)] });
  db = t.db;
  close = () => t.close();
}
try {
  const places = await db.kysely
    .selectFrom('places')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const resolver = createPlaceNameResolver(db);
  const deps = matchDepsOf({ db, places: () => resolver });
  const mapping = Object.fromEntries(columns.map((c) => [fieldOf[c], c]));
  const out = await open(join(dir, 'result.csv'), 'w');
  const list = await openList(listPath, 'csv');
  const counts = emptyCounts();
  console.log(`RSS before the job: ${(process.memoryUsage.rss() / 2 ** 20).toFixed(0)} MB`);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  // RSS as the job goes (a tenth of the list at a time): a job that streams its list stays flat.
  let nextReport = rows / 10;
  const onBatch = () => {
    if (counts.rows_done < nextReport) return;
    nextReport += rows / 10;
    const s = (performance.now() - started) / 1000;
    console.log(
      `  ${counts.rows_done} rows, ${s.toFixed(0)} s, ${(counts.rows_done / s).toFixed(0)} rows/s, RSS ${(process.memoryUsage.rss() / 2 ** 20).toFixed(0)} MB`,
    );
  };
  await writeMatchedList({ deps, list, headers: list.headers, mapping, threshold: null, out, counts, batchSize, onBatch });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await out.close();
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  console.log(
    `catalog: ${Number(places.n)} places${catalogFile ? ` (${catalogFile})` : ' (the labelled set)'}; list: ${rows} rows, batches of ${batchSize}\n` +
      `matched ${counts.matched}, bad rows ${counts.bad_rows}: ${seconds.toFixed(1)} s wall, ${(rows / seconds).toFixed(0)} rows/s; ` +
      `CPU ${cpuSeconds.toFixed(1)} s (${(rows / cpuSeconds).toFixed(0)} rows per CPU-second); ` +
      `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (the whole process: the catalog's app and the job)`,
  );
} finally {
  await close();
}
