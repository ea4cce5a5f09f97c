/**
 * Builds the held-out set of issue 38 (`bench/lib/lookup-set.ts`) and writes it, one case a line:
 *
 *   node --import tsx bench/lookup-set.ts [--data ../shared/data] [--per-kind 300] [--reuse]
 *
 * Imports the nine OpenStreetMap extracts and the Overture and Foursquare samples into var/lookup-quality/catalog.db
 * (`--reuse` keeps an existing one), then writes var/lookup-quality/set.ndjson: places whose phone, domain, email or
 * address no other open place carries, each as people type it. The same data gives the same set (places are chosen
 * by a hash of their public id). The set is derived from ODbL data: it stays in var/, out of the repository.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase } from '../src/infra/db/database.ts';
import { argValue } from './lib/args.ts';
import { buildLookupSet, lookupCatalog } from './lib/lookup-set.ts';

const root = resolve(import.meta.dirname, '..');
const dataDir = resolve(root, argValue('--data', '../shared/data'));
const outDir = resolve(root, 'var/lookup-quality');
const dbPath = resolve(outDir, 'catalog.db');
mkdirSync(outDir, { recursive: true });
await lookupCatalog(dataDir, dbPath, process.argv.includes('--reuse'));
const db = openDatabase(`sqlite:${dbPath}`);
const cases = await buildLookupSet(db, Number(argValue('--per-kind', '300')));
await db.close();
writeFileSync(resolve(outDir, 'set.ndjson'), cases.map((c) => JSON.stringify(c)).join('\n') + '\n');
const byKind = new Map<string, number>();
for (const c of cases) byKind.set(c.kind, (byKind.get(c.kind) ?? 0) + 1);
console.log(`${cases.length} cases: ${[...byKind].map(([k, n]) => `${k} ${n}`).join(', ')} → ${resolve(outDir, 'set.ndjson')}`);
