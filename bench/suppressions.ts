/**
 * What a suppression list of 1,000,000 entries costs the searches and exports of its account:
 *
 *   npm run bench:suppressions -- [--entries 1000000] [--per-class 150]
 *
 * Builds (once, then keeps) var/bench/suppressions.db: the migrated reference data and the real
 * OpenStreetMap places of ../shared/data/osm/osm-pois-all.ndjson.gz. Two accounts: one without a list,
 * one whose list of `--entries` entries is uploaded through the CSV upload service in one stream (its time
 * is printed): a quarter each phones (written nationally, with the country), websites, emails and place ids.
 * One in fifty of the catalog's own phones, domains, emails and ids is among them, so the list hides real
 * places; the rest are keys no place has, as most of a real list would be.
 *
 * The same searches (type + city, name + city, a country, type + country, a box) run for both accounts as
 * `GET /api/v2/map/search` runs them (`searchPlaces`: resolved, counted, a first page, saved), without HTTP
 * and without the read cache, each distinct query once per account, the two accounts
 * alternating who goes first; the one with the list also counts what it hides (`suppressed`). Then both
 * export every place of the catalog (a world box) as the export streams it. Prints p50/p99 per class and
 * the ratio of the list's p99 to the baseline's (target ≤ 1.5×).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { importFiles, prepareDatabase } from '../src/bootstrap.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { migrateToLatest } from '../src/infra/db/migrate.ts';
import { createReadPool } from '../src/infra/db/read-pool.ts';
import { accountExclusion } from '../src/modules/leads/exclusion.ts';
import { noCriteria, type PlaceCriteria } from '../src/modules/search/query/criteria.ts';
import { streamPlaceTuples } from '../src/modules/search/query/place-stream.ts';
import { createReadTasks, readTasksModule } from '../src/modules/search/read-tasks.ts';
import type { MapSearchQuery } from '../src/modules/search/search.schema.ts';
import { searchPlaces } from '../src/modules/search/search.service.ts';
import { createSearch } from '../src/modules/search/search.ts';
import { uploadSuppressionsCsv } from '../src/modules/suppressions/suppressions.service.ts';
import { argValue } from './lib/args.ts';

const entries = Number(argValue('--entries', '1000000'));
const perClass = Number(argValue('--per-class', '150'));
const dir = resolve(import.meta.dirname, '../var/bench');
mkdirSync(dir, { recursive: true });
const path = resolve(dir, 'suppressions.db');
const source = resolve(import.meta.dirname, '../../shared/data/osm/osm-pois-all.ndjson.gz');
const fresh = !existsSync(path);
const db = openDatabase(`sqlite:${path}`);
let started = performance.now();
if (fresh) {
  await prepareDatabase(db);
  await importFiles(db, [source]);
  console.log(`catalog built from ${source} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
} else {
  await migrateToLatest(db);
}
const places = Number(
  (
    await db.kysely
      .selectFrom('places')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
  ).n,
);
console.log(`${path}: ${places.toLocaleString('en')} places`);

async function newAccount(label: string): Promise<number> {
  const now = new Date().toISOString();
  const email = `bench-${label}-${Date.now()}@example.com`;
  const row = await db.kysely
    .insertInto('accounts')
    .values({ email, email_norm: email, password_hash: 'x', created_at: now, password_changed_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}
const plain = await newAccount('plain');
const listed = await newAccount('listed');

// The list: real keys of one place in fifty, then keys no place has, a quarter of each kind.
const real = await db.kysely
  .selectFrom('places')
  .select(['id', 'public_id', 'phone', 'country_code', 'website', 'email'])
  .orderBy('id')
  .execute();
const lines: string[] = ['type,value,country'];
for (const p of real) {
  if (p.id % 50 !== 0) continue;
  if (p.phone && p.country_code) lines.push(`phone,"${p.phone.replaceAll('"', '""')}",${p.country_code}`);
  if (p.website) lines.push(`domain,"${p.website.replaceAll('"', '""')}",`);
  if (p.email) lines.push(`email,"${p.email.replaceAll('"', '""')}",`);
  lines.push(`place,${p.public_id},`);
}
const realEntries = lines.length - 1;
function* csv(): Generator<string> {
  yield `${lines.join('\n')}\n`;
  const b32 = 'abcdefghijklmnopqrstuvwxyz234567';
  let chunk = '';
  for (let i = 0; i < entries - realEntries; i++) {
    switch (i % 4) {
      case 0:
        chunk += `phone,030 ${String(20000000 + i).slice(0, 8)},DE\n`;
        break;
      case 1:
        chunk += `domain,https://www.shop-${i}.example/contact,\n`;
        break;
      case 2:
        chunk += `email,sales${i}@company-${i % 1013}.example,\n`;
        break;
      default: {
        let id = 'plc_zz';
        for (let k = 0, v = i; k < 14; k++, v = Math.floor(v / 32)) id += b32[v % 32];
        chunk += `place,${id},\n`;
      }
    }
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk;
}
started = performance.now();
const upload = await uploadSuppressionsCsv(db, listed, Readable.from(csv()), { onInvalid: 'skip' });
const uploadS = (performance.now() - started) / 1000;
console.log(
  `upload of ${upload.received.toLocaleString('en')} entries (${realEntries.toLocaleString('en')} from the catalog) through the CSV service: ${uploadS.toFixed(1)} s; added ${upload.added.toLocaleString('en')}, duplicates ${upload.duplicates}, rejected ${upload.rejected}; list ${JSON.stringify(upload.counts)}`,
);

const deps = createSearch(db, createReadPool({ db, workers: 0, tasks: createReadTasks(), tasksModule: readTasksModule }));

const pairs = await db.kysely
  .selectFrom('places')
  .select(['city', 'category', (eb) => eb.fn.countAll<number>().as('n')])
  .where('category', 'is not', null)
  .where('city', 'is not', null)
  .groupBy(['city', 'category'])
  .orderBy('n', 'desc')
  .limit(perClass)
  .execute();
const step = Math.max(1, Math.floor(real.length / perClass));
const named = await db.kysely.selectFrom('places').select(['id', 'name', 'city']).where('city', 'is not', null).orderBy('id').execute();
const countries = await db.kysely
  .selectFrom('places')
  .select('country_code')
  .where('country_code', 'is not', null)
  .groupBy('country_code')
  .execute();
const located = await db.kysely.selectFrom('places').select(['id', 'lat', 'lon']).where('lat', 'is not', null).orderBy('id').execute();
const boxes = Array.from({ length: perClass }, (_, i) => located[(i * 7919) % located.length]!).map((p) => {
  const d = 0.01 + (p.id % 5) * 0.01;
  return `${(p.lon! - d).toFixed(4)},${(p.lat! - d).toFixed(4)},${(p.lon! + d).toFixed(4)},${(p.lat! + d).toFixed(4)}`;
});
type Search = Omit<MapSearchQuery, 'per_page'>;
const classes: Array<[string, Search[]]> = [
  ['type + city', pairs.map((p) => ({ type: p.category!, city: p.city! }))],
  [
    'name + city',
    named
      .filter((_, i) => i % step === 0)
      .slice(0, perClass)
      .map((r) => ({ query: r.name, city: r.city! })),
  ],
  ['country', countries.map((c) => ({ country: c.country_code! }))],
  ['type + country', countries.flatMap((c) => ['restaurant', 'cafe', 'shop', 'bar'].map((type) => ({ type, country: c.country_code! })))],
  ['box', boxes.map((bbox) => ({ bbox }))],
];

const q = (times: number[], p: number) => [...times].sort((a, b) => a - b)[Math.min(times.length - 1, Math.floor(p * times.length))]!;
const all: Record<'plain' | 'listed', number[]> = { plain: [], listed: [] };
let hidden = 0;
for (const [label, inputs] of classes) {
  const times: Record<'plain' | 'listed', number[]> = { plain: [], listed: [] };
  const seen = new Set<string>();
  const errors = { plain: 0, listed: 0 };
  let i = 0;
  for (const input of inputs) {
    const key = JSON.stringify(input);
    if (seen.has(key)) continue;
    seen.add(key);
    const order: Array<'plain' | 'listed'> = i++ % 2 === 0 ? ['plain', 'listed'] : ['listed', 'plain'];
    for (const who of order) {
      const t0 = performance.now();
      try {
        const r = await searchPlaces(deps, who === 'plain' ? plain : listed, { ...input, per_page: 20 }, null);
        if (who === 'listed') hidden += r.suppressed;
      } catch {
        errors[who]++;
      }
      times[who].push(performance.now() - t0);
    }
  }
  all.plain.push(...times.plain);
  all.listed.push(...times.listed);
  const f = (n: number) => n.toFixed(1).padStart(6);
  console.log(
    `${label.padEnd(16)} ${String(times.plain.length).padStart(4)} queries  no list p50 ${f(q(times.plain, 0.5))} p99 ${f(q(times.plain, 0.99))} ms | ` +
      `1M list p50 ${f(q(times.listed, 0.5))} p99 ${f(q(times.listed, 0.99))} ms | p99 ratio ${(q(times.listed, 0.99) / q(times.plain, 0.99)).toFixed(2)}×${errors.plain + errors.listed ? ` (400: ${errors.plain} / ${errors.listed})` : ''}`,
  );
}
const ratio = (p: number) =>
  `${q(all.plain, p).toFixed(1)} → ${q(all.listed, p).toFixed(1)} ms (${(q(all.listed, p) / q(all.plain, p)).toFixed(2)}×)`;
console.log(
  `all searches, no list → 1M list: p50 ${ratio(0.5)}, p90 ${ratio(0.9)}, p99 ${ratio(0.99)} (target p99 ≤ 1.5×); the list hid ${hidden.toLocaleString('en')} places in those answers`,
);

// Exports: every place of the catalog as the export reads it.
const world: PlaceCriteria = { ...noCriteria, bbox: [-180, -90, 180, 90] };
const exportTimes: Record<'plain' | 'listed', number[]> = { plain: [], listed: [] };
let rows: Record<'plain' | 'listed', number> = { plain: 0, listed: 0 };
for (let round = 0; round < 3; round++) {
  for (const who of round % 2 === 0 ? (['plain', 'listed'] as const) : (['listed', 'plain'] as const)) {
    const t0 = performance.now();
    const exclusion = await accountExclusion(db, who === 'plain' ? plain : listed, { onlyNew: false });
    let n = 0;
    for await (const batch of streamPlaceTuples(db, { ...world, exclude: exclusion }, 1000, false)) n += batch.length;
    exportTimes[who].push(performance.now() - t0);
    rows = { ...rows, [who]: n };
  }
}
const median = (x: number[]) => q(x, 0.5);
console.log(
  `export of a world box (median of 3): no list ${rows.plain.toLocaleString('en')} rows ${median(exportTimes.plain).toFixed(0)} ms | ` +
    `1M list ${rows.listed.toLocaleString('en')} rows ${median(exportTimes.listed).toFixed(0)} ms: ${(median(exportTimes.listed) / median(exportTimes.plain)).toFixed(2)}×`,
);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}; ${new Date().toISOString()}`,
);

// The bench's accounts go (their lists with them), so the next run starts from the same catalog.
await db.kysely.deleteFrom('accounts').where('id', 'in', [plain, listed]).execute();
await db.close();
