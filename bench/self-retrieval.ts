/**
 * Self-retrieval over every real record: does search find each named place by its own name in its own city?
 *
 *   npm run bench:self-retrieval -- [--data ../shared/data] [--reuse] [--sample N] [--seed S] [--concurrency 8]
 *
 * Imports every file of ../shared/data (the nine OSM extracts, the merged OSM files, Overture, both Yelp
 * files, Zomato, both Google Maps scraper files, Michelin) into a fresh SQLite catalog through the real import
 * pipeline (var/self-retrieval/catalog.db; `--reuse` keeps an existing one), then asks the API in process
 * (`app.inject`, a real token, two read threads) for every named place: its exact name with its city on
 * `/v1/search` and on `/api/v2/map/search?query=&city=`, and the same with one typo (a letter dropped,
 * doubled or swapped in a word of 5+ letters, deterministic for `--seed`). Prints the share found in the top
 * 10 by source, by script and the misses by cause; writes every miss to var/self-retrieval/misses.tsv.
 * `--sample N` asks every k-th place only (about N of them).
 *
 * Targets (issue #15): exact name + city ≥ 99.5 % in every source; one typo ≥ 97 %.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { buildApp } from '../src/app.ts';
import { importFiles, prepareDatabase } from '../src/bootstrap.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { loadGazetteer } from '../src/modules/geo/gazetteer.ts';
import { createAccountWithToken } from '../test/helpers/accounts.ts';
import { argValue } from './lib/args.ts';
import {
  type Endpoint,
  endpoints,
  namedPlaces,
  reasons,
  runSelfRetrieval,
  type Share,
  scriptOf,
  share,
  sourceLabel,
  type Tally,
  tally,
} from './lib/self-retrieval.ts';

const root = resolve(import.meta.dirname, '..');
const dataDir = resolve(root, argValue('--data', '../shared/data'));
const outDir = resolve(root, 'var/self-retrieval');
const dbPath = resolve(outDir, 'catalog.db');
const reuse = process.argv.includes('--reuse');
const sample = Number(argValue('--sample', '0'));
const seed = argValue('--seed', '15');
const concurrency = Number(argValue('--concurrency', '8'));

/** Every importable file of the data directory: all OSM files (extracts and merged), then the other sources. */
function allFiles(dir: string): string[] {
  const osm = readdirSync(resolve(dir, 'osm'))
    .filter((f) => f.endsWith('.osm.pbf') || f.endsWith('.ndjson.gz'))
    .sort()
    .map((f) => resolve(dir, 'osm', f));
  const others = [
    'places/overture-places-boulder-3545.ndjson.gz',
    'ratings/yelp-fusion-4cities-2018.ndjson.gz',
    'ratings/yelp-open-dataset-business-sample5000.ndjson.gz',
    'ratings/zomato-restaurants-9551.csv.gz',
    'ratings/gmaps-scraper-europe-115.csv.gz',
    'ratings/gmaps-scraper-plano-tx-73.csv.gz',
    'places/michelin-guide-2022-6510.csv.gz',
  ].map((f) => resolve(dir, f));
  for (const f of others) if (!existsSync(f)) throw new Error(`${f} is missing`);
  return [...osm, ...others];
}

mkdirSync(outDir, { recursive: true });
const started = performance.now();
if (!reuse || !existsSync(dbPath)) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbPath}${suffix}`, { force: true });
  const db = openDatabase(`sqlite:${dbPath}`);
  await prepareDatabase(db);
  for (const file of allFiles(dataDir)) {
    const [s] = await importFiles(db, [file]);
    console.log(
      `imported ${file.slice(dataDir.length + 1)} (${sourceLabel(file)}): ${s!.imported_count} new, ${s!.updated_count} updated, ${s!.unchanged_count} unchanged, ${s!.skipped_count} skipped`,
    );
  }
  await db.close();
}
console.log(`catalog ${reuse ? 'reused' : 'imported'} in ${((performance.now() - started) / 1000).toFixed(0)} s: ${dbPath}`);

const db = openDatabase(`sqlite:${dbPath}`);
await prepareDatabase(db);
const app = await buildApp({
  config: loadConfig({
    DATABASE_URL: `sqlite:${dbPath}`,
    LOG_LEVEL: 'silent',
    DB_READ_WORKERS: '2',
    IMPORT_DEMO_DATA: 'false',
    RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
    QUOTA_REQUESTS_PER_DAY: '1000000000',
  }),
  db,
});
const { authorization } = await createAccountWithToken(db, { scopes: ['search'] });

const gazetteer = loadGazetteer();
const sameNamedCities = (city: string) => {
  const r = gazetteer.resolveCity(city);
  return [...(r.chosen ? [r.chosen] : []), ...r.alternatives].map((c) => c.id);
};

const all = await namedPlaces(db);
const step = sample > 0 ? Math.max(1, Math.floor(all.length / sample)) : 1;
const places = all.filter((_, i) => i % step === 0);
console.log(
  `${all.length} named places; asking ${places.length}${step > 1 ? ` (every ${step}th)` : ''}, seed ${seed}, ${concurrency} in flight`,
);
const askStarted = performance.now();
const result = await runSelfRetrieval(places, {
  app,
  authorization,
  seed,
  concurrency,
  sameNamedCities,
  catalog: all,
  progress: (done, total) => {
    if (done % 5000 === 0 || done === total)
      console.log(`  ${done} / ${total} places (${((performance.now() - askStarted) / 1000).toFixed(0)} s)`);
  },
});
await app.close();
await db.close();

const pad = (s: string | number, n: number) => String(s).padStart(n);
function printTally(title: string, rows: Map<string, Tally>, exactTarget: number | null, typoTarget: number | null): void {
  console.log(`\n${title}`);
  console.log(
    `| ${title.split(' ').at(-1)} | places | exact /v1/search | exact map/search | typo places | typo /v1/search | typo map/search |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const keys = [...rows.keys()].filter((k) => k !== 'all').sort((a, b) => rows.get(b)!.places - rows.get(a)!.places);
  for (const k of [...keys, 'all']) {
    const t = rows.get(k)!;
    const mark = (s: Share, target: number | null) => {
      const text = `${share(s)} (${s.of - s.found} missed${s.crowd > 0 ? `, ${s.crowd} in a crowd` : ''})`;
      return target !== null && s.of > 0 && s.found / s.of < target ? `**${text}**` : text;
    };
    const cells = [
      ...endpoints.map((e: Endpoint) => mark(t.exact[e], exactTarget)),
      pad(t.typo.v1.of + t.typo.v1.crowd, 6),
      ...endpoints.map((e: Endpoint) => mark(t.typo[e], typoTarget)),
    ];
    console.log(`| ${k === 'all' ? '**all**' : k} | ${t.places} | ${cells.join(' | ')} |`);
  }
}

console.log(
  `\nasked in ${((performance.now() - askStarted) / 1000).toFixed(0)} s; ${new Date().toISOString()}; ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`,
);
const bySource = (places: Array<{ source: string }>) => {
  const n = new Map<string, number>();
  for (const p of places) n.set(p.source, (n.get(p.source) ?? 0) + 1);
  return n.size ? ` (${[...n].map(([s, k]) => `${s} ${k}`).join(', ')})` : '';
};
console.log(
  `not asked: ${result.withoutCity.length} named places without any city${bySource(result.withoutCity)}; ${result.withoutWords.length} whose name has no letter or digit${bySource(result.withoutWords)}`,
);
console.log(
  `"in a crowd": the first ${10} results are all places of that very name in that city (a chain): left out of the share, counted apart.`,
);
printTally(
  'Found in the top 10, by source',
  tally(result.outcomes, (o) => o.place.source),
  0.995,
  0.97,
);
printTally(
  'Found in the top 10, by script',
  tally(result.outcomes, (o) => o.script),
  null,
  null,
);
console.log('\nMisses by cause');
console.log('| cause | exact /v1/search | exact map/search | typo /v1/search | typo map/search |');
console.log('|---|---:|---:|---:|---:|');
for (const r of reasons(result.misses)) console.log(`| ${r.reason} | ${r.exact.v1} | ${r.exact.map} | ${r.typo.v1} | ${r.typo.map} |`);

const misses = resolve(outDir, 'misses.tsv');
const cell = (v: unknown) => String(v ?? '').replace(/[\t\n]/g, ' ');
writeFileSync(
  misses,
  [
    [
      'source',
      'script',
      'endpoint',
      'variant',
      'reason',
      'name',
      'query',
      'city',
      'resolved_city_id',
      'place_city_id',
      'city_source',
      'total',
      'public_id',
    ].join('\t'),
    ...result.misses
      .sort((a, b) => a.reason.localeCompare(b.reason) || a.place.source.localeCompare(b.place.source) || a.place.id - b.place.id)
      .map((m) =>
        [
          m.place.source,
          scriptOf(m.place.name),
          m.endpoint,
          m.variant,
          m.reason,
          m.place.name,
          m.query,
          m.place.city,
          m.resolvedCityId,
          m.place.cityId,
          m.place.citySource,
          m.total,
          m.place.publicId,
        ]
          .map(cell)
          .join('\t'),
      ),
  ].join('\n') + '\n',
);
console.log(`\n${result.misses.length} misses listed in ${misses}`);
