import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { type Db, openDatabase } from '../../src/infra/db/database.ts';
import { migrateToLatest } from '../../src/infra/db/migrate.ts';
import { contentHash, type PlaceRecord, publicPlaceId } from '../../src/modules/places/place-record.ts';
import { noCriteria, type PlaceCriteria, type PlaceKey } from '../../src/modules/search/query/criteria.ts';
import { findPlacesPage } from '../../src/modules/search/query/place-query.repository.ts';
import { openTestSqlite, postgresAdminUrl, type TestDatabase } from '../helpers/databases.ts';
import { writePlaces } from '../helpers/places.ts';

/**
 * `sort=name` gives the same order on SQLite and on a PostgreSQL database whose collation is not `C`
 * (a `createdb` on a host whose locale is en_US). The test schemas of the other files live in a `C.UTF-8`
 * database, where the two agree anyway; this file creates a database with an ICU en-US collation.
 */

const names = [
  'apple',
  'Banana',
  'Äpfel',
  'zebra',
  'Zoo',
  'éclair',
  'Eclair',
  'Ölmühle',
  'o2 shop',
  '東京',
  'a-b',
  'ab',
  'a b',
  '_under',
  '10 Bar',
  '9 Bar',
];

function record(name: string): PlaceRecord {
  const base: Omit<PlaceRecord, 'content_hash'> = {
    public_id: publicPlaceId('test', name),
    source: 'test',
    source_id: name,
    name,
    names: null,
    category: 'restaurant',
    categories: ['restaurant'],
    source_categories: null,
    phone: null,
    phone_e164: null,
    website: null,
    website_domain: null,
    email: null,
    street: null,
    housenumber: null,
    postcode: null,
    address: null,
    region: null,
    city: null,
    city_id: null,
    city_source: null,
    city_distance_m: null,
    country_code: null,
    lat: 48.1,
    lon: 11.5,
    rating: null,
    review_count: null,
    opening_hours: null,
    attributes: null,
  };
  return { ...base, content_hash: contentHash(base) };
}

const everything: PlaceCriteria = noCriteria;

/** Every name in `sort=name` order, three a page (keyset pages: the comparison follows the same order). */
async function byName(db: Db): Promise<string[]> {
  const out: string[] = [];
  let after: PlaceKey | null = null;
  for (;;) {
    const page = await findPlacesPage(db, everything, 'name', after, 3);
    out.push(...page.map((p) => p.name));
    if (page.length < 3) return out;
    const last = page.at(-1)!;
    after = { key: last.sort_key, id: last.id };
  }
}

describe('sort=name on a PostgreSQL database with an en-US collation', () => {
  const database = `la_icu_${randomBytes(5).toString('hex')}`;
  let sqlite: TestDatabase;
  let postgres: Db | undefined;

  before(async () => {
    const admin = new pg.Client({ connectionString: postgresAdminUrl });
    await admin.connect();
    try {
      await admin.query(
        `CREATE DATABASE ${database} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`,
      );
    } finally {
      await admin.end();
    }
    const url = new URL(postgresAdminUrl);
    url.pathname = `/${database}`;
    postgres = openDatabase(url.toString());
    sqlite = openTestSqlite();
    for (const db of [sqlite.db, postgres]) {
      await migrateToLatest(db);
      await writePlaces(db, names.map(record));
    }
  });

  after(async () => {
    await sqlite?.dispose();
    await postgres?.close();
    const admin = new pg.Client({ connectionString: postgresAdminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.end();
  });

  test("the database's own order differs from code point order (the case this file is about)", async () => {
    const { rows } = await sql<{ name: string }>`SELECT name FROM places ORDER BY name`.execute(postgres!.kysely);
    assert.notDeepEqual(
      rows.map((r) => r.name),
      [...names].sort(),
    );
  });

  test('both dialects page the names in code point order', async () => {
    const expected = [...names].sort();
    assert.deepEqual(await byName(sqlite.db), expected);
    assert.deepEqual(await byName(postgres!), expected);
  });
});
