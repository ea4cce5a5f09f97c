import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { App } from '../../src/app.ts';
import type { Db } from '../../src/infra/db/database.ts';
import {
  addressKey,
  type ContactKind,
  contactKey,
  contactKinds,
  normaliseEmail,
  placeContactKeys,
} from '../../src/modules/search/contact-keys.ts';

/**
 * The held-out set of issue 38: places whose phone, domain, email or address is carried by no other open place of
 * the catalog, each asked the way people type it (national format, spaced, `+CC`, `www.`, `https://…/`,
 * UPPERCASE email, `Street 12, City`, abbreviated street words), through `/v1/search?query=`. Deterministic for
 * a catalog: places are chosen by a hash of their public id, never at random. Built from the nine OpenStreetMap
 * extracts and the Overture and Foursquare samples (`lookupSetFiles`).
 */

export interface LookupCase {
  kind: ContactKind;
  /** The place to find (public id). */
  placeId: string;
  /** What is typed into the search box. */
  query: string;
  /** How it was written (`national`, `www`, `upper`…), for the misses. */
  variant: string;
  source: string;
}

/** The files the set is built from, under the shared data directory. */
export function lookupSetFiles(dataDir: string): string[] {
  return [
    'osm/andorra-2026.osm.pbf',
    'osm/helsinki-center-2019.osm.pbf',
    'osm/liechtenstein-2024.osm.pbf',
    'osm/london-center-2020.osm.pbf',
    'osm/malta-2018.osm.pbf',
    'osm/monaco-2026.osm.pbf',
    'osm/munich-center-2020.osm.pbf',
    'osm/porto-2020.osm.pbf',
    'osm/tokyo-center.osm.pbf',
    'places/overture-places-boulder-3545.ndjson.gz',
    'places/fsq-os-places-sample-10k-2024-11-19.csv.gz',
  ].map((f) => resolve(dataDir, f));
}

/** Street words as people abbreviate them when they type (the other direction is the source's). */
const abbreviations: Array<[RegExp, string]> = [
  [/stra(ss|ß)e\b/i, 'str.'],
  [/^Rua\b/, 'R.'],
  [/^Avenida\b/, 'Av.'],
  [/\bStreet$/, 'St'],
  [/\bAvenue$/, 'Ave'],
  [/\bRoad$/, 'Rd'],
];

function abbreviated(street: string): string | null {
  for (const [pattern, short] of abbreviations) if (pattern.test(street)) return street.replace(pattern, short);
  return null;
}

const rank = (id: string, salt: string) => createHash('sha256').update(`${salt}:${id}`).digest().readUInt32BE(0);

/**
 * The cases of the set: per kind at most `perKind` places (the first by hash of their public id), each asked in
 * the ways listed for its kind. Only places whose key of that kind no other open place carries.
 */
export async function buildLookupSet(db: Db, perKind: number): Promise<LookupCase[]> {
  const rows = await db.kysely
    .selectFrom('places')
    .select([
      'public_id',
      'source',
      'phone',
      'phone_e164',
      'website',
      'website_domain',
      'email',
      'street',
      'housenumber',
      'postcode',
      'city',
      'country_code',
    ])
    .where('closed_at', 'is', null)
    .where('merged_into', 'is', null)
    .execute();
  const carriers = new Map<string, number>();
  const keysOf = rows.map((r) => placeContactKeys({ ...r, found_phone: null, found_email: null }));
  for (const keys of keysOf) for (const k of keys) carriers.set(k, (carriers.get(k) ?? 0) + 1);
  const unique = (key: string | null) => key !== null && carriers.get(key) === 1;

  const cases: LookupCase[] = [];
  for (const kind of contactKinds) {
    const chosen = rows
      .filter((r) => {
        switch (kind) {
          case 'phone':
            return r.phone_e164 !== null && unique(contactKey('phone', r.phone_e164));
          case 'domain':
            return r.website_domain !== null && unique(contactKey('domain', r.website_domain));
          case 'email': {
            const email = r.email ? normaliseEmail(r.email) : null;
            return email !== null && unique(contactKey('email', email));
          }
          case 'address': {
            const key = addressKey(r.street, r.housenumber);
            return key !== null && r.city !== null && unique(contactKey('address', key));
          }
        }
      })
      .sort((a, b) => rank(a.public_id, kind) - rank(b.public_id, kind))
      .slice(0, perKind);
    for (const r of chosen) {
      const add = (variant: string, query: string) => cases.push({ kind, placeId: r.public_id, query, variant, source: r.source });
      switch (kind) {
        case 'phone': {
          const parsed = parsePhoneNumberFromString(r.phone_e164!);
          if (!parsed) break;
          add('national', parsed.formatNational());
          add('international', parsed.formatInternational());
          add('e164', parsed.number);
          break;
        }
        case 'domain':
          add('www', `www.${r.website_domain}`);
          add('https', `https://${r.website_domain}/`);
          add('website', r.website!);
          break;
        case 'email':
          add('upper', r.email!.toUpperCase());
          add('as-is', r.email!.trim());
          break;
        case 'address': {
          const street = r.housenumber ? `${r.street} ${r.housenumber}` : r.street!;
          add('street-city', `${street}, ${r.city}`);
          const short = abbreviated(r.street!);
          if (short)
            add('abbreviated', `${r.housenumber ? `${short} ${r.housenumber}` : short}, ${[r.postcode, r.city].filter(Boolean).join(' ')}`);
          break;
        }
      }
    }
  }
  return cases;
}

export interface KindScore {
  kind: ContactKind;
  cases: number;
  mrr: number;
  found: number;
  misses: Array<LookupCase & { rank: number | null }>;
}

/** Asks every case on `/v1/search?query=` (top 10) and scores the reciprocal rank of its place per kind. */
export async function scoreLookupSet(app: App, authorization: string, cases: LookupCase[]): Promise<KindScore[]> {
  const scores = new Map<ContactKind, KindScore>();
  for (const kind of contactKinds) scores.set(kind, { kind, cases: 0, mrr: 0, found: 0, misses: [] });
  for (const c of cases) {
    const res = await app.inject({
      method: 'GET',
      url: `/v1/search?${new URLSearchParams({ query: c.query, per_page: '10' })}`,
      headers: { authorization },
    });
    const ids = res.statusCode === 200 ? (res.json() as { data: Array<{ id: string }> }).data.map((p) => p.id) : [];
    const at = ids.indexOf(c.placeId);
    const score = scores.get(c.kind)!;
    score.cases++;
    if (at >= 0) {
      score.mrr += 1 / (at + 1);
      score.found++;
    }
    if (at !== 0) score.misses.push({ ...c, rank: at >= 0 ? at + 1 : null });
  }
  return [...scores.values()].map((s) => ({ ...s, mrr: s.cases > 0 ? s.mrr / s.cases : 0 }));
}

/** The set's catalog: the files imported into a fresh SQLite file through the real pipeline, or the one there (`reuse`). */
export async function lookupCatalog(dataDir: string, dbPath: string, reuse: boolean): Promise<void> {
  const { existsSync, rmSync } = await import('node:fs');
  const { importFiles, prepareDatabase } = await import('../../src/bootstrap.ts');
  const { openDatabase } = await import('../../src/infra/db/database.ts');
  if (reuse && existsSync(dbPath)) return;
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbPath}${suffix}`, { force: true });
  const db = openDatabase(`sqlite:${dbPath}`);
  await prepareDatabase(db);
  for (const file of lookupSetFiles(dataDir)) {
    const [s] = await importFiles(db, [file]);
    console.log(`imported ${file.slice(dataDir.length + 1)}: ${s!.imported_count} places`);
  }
  await db.close();
}

/**
 * The app on a catalog as the lookup benches ask it: in process, the in-memory engine built (`onReady`), two read
 * threads, no rate limit or quota (thousands of questions with one token), and a token of scope `search`.
 */
export async function searchingApp(db: Db, path: string): Promise<{ app: App; authorization: string }> {
  const { buildApp } = await import('../../src/app.ts');
  const { loadConfig } = await import('../../src/config.ts');
  const { createAccountWithToken } = await import('../../test/helpers/accounts.ts');
  const app = await buildApp({
    config: loadConfig({
      DATABASE_URL: `sqlite:${path}`,
      LOG_LEVEL: 'silent',
      DB_READ_WORKERS: '2',
      IMPORT_DEMO_DATA: 'false',
      RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      QUOTA_REQUESTS_PER_DAY: '1000000000',
    }),
    db,
  });
  await app.ready();
  const { authorization } = await createAccountWithToken(db, { scopes: ['search'] });
  return { app, authorization };
}
