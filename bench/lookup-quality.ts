/**
 * Finding a place by what is known of it (issue 38): MRR@10 per kind of contact on the held-out set, through
 * `/v1/search?query=` as a person types it.
 *
 *   npm run bench:lookup-quality -- [--data ../shared/data] [--reuse]
 *
 * Reads var/lookup-quality/set.ndjson when it is there (bench/lookup-set.ts builds it and the catalog), else builds
 * both first. Asks every case in process (`app.inject`, a real token, the in-memory engine, two read threads) and
 * prints per kind the cases, MRR@10 and the share found in the top 10; writes the misses to
 * var/lookup-quality/misses.tsv. Target: MRR@10 ≥ 0.95 for each of phone, domain, email and address.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { prepareDatabase } from '../src/bootstrap.ts';
import { openDatabase } from '../src/infra/db/database.ts';
import { argValue } from './lib/args.ts';
import { buildLookupSet, type LookupCase, lookupCatalog, scoreLookupSet, searchingApp } from './lib/lookup-set.ts';

const root = resolve(import.meta.dirname, '..');
const dataDir = resolve(root, argValue('--data', '../shared/data'));
const outDir = resolve(root, 'var/lookup-quality');
const dbPath = resolve(outDir, 'catalog.db');
const setPath = resolve(outDir, 'set.ndjson');
mkdirSync(outDir, { recursive: true });
const reuse = process.argv.includes('--reuse') || existsSync(setPath);
await lookupCatalog(dataDir, dbPath, reuse);
const db = openDatabase(`sqlite:${dbPath}`);
await prepareDatabase(db);
const cases: LookupCase[] = existsSync(setPath)
  ? readFileSync(setPath, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as LookupCase)
  : await buildLookupSet(db, 300);
const { app, authorization } = await searchingApp(db, dbPath);
const started = performance.now();
const scores = await scoreLookupSet(app, authorization, cases);
console.log(`${cases.length} cases asked in ${((performance.now() - started) / 1000).toFixed(1)} s`);
for (const s of scores)
  console.log(
    `${s.kind.padEnd(8)} ${String(s.cases).padStart(5)} cases  MRR@10 ${s.mrr.toFixed(3)}  found in top 10 ${((100 * s.found) / Math.max(1, s.cases)).toFixed(1)} %`,
  );
writeFileSync(
  resolve(outDir, 'misses.tsv'),
  scores
    .flatMap((s) => s.misses)
    .map((m) => [m.kind, m.variant, m.source, m.rank ?? '-', m.placeId, m.query].join('\t'))
    .join('\n'),
);
await app.close();
await db.close();
