import { type Kysely, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import type { Database } from '../../infra/db/schema.ts';
import type { CityRow, CountryRow } from './geo.data.ts';

export type ReferenceName = 'countries' | 'cities';

/** The stored reference rows, by name: what each table was last built from. */
export async function readReferenceVersions(db: Db): Promise<Map<string, { version: string; rowCount: number }>> {
  const rows = await db.kysely
    .selectFrom('reference_data')
    .select(['name', 'version', 'row_count'])
    .where('name', 'in', ['countries', 'cities'])
    .execute();
  return new Map(rows.map((r) => [r.name, { version: r.version, rowCount: Number(r.row_count) }]));
}

/** Replaces reference tables in one transaction. One implementation per dialect: bulk paths differ. */
export interface GeoStore {
  /**
   * Runs `plan` inside a write transaction that holds the reference-data lock, and writes what it returns.
   * `plan` sees the versions stored at that moment, so two processes starting together write once.
   */
  replace(
    plan: (stored: Map<string, string>) => { countries?: CountryRow[]; cities?: CityRow[]; versions: Record<ReferenceName, string> },
  ): Promise<void>;
}

const now = (): string => new Date().toISOString();

class SqliteGeoStore implements GeoStore {
  constructor(private readonly handle: NonNullable<Db['sqlite']>) {}

  async replace(plan: Parameters<GeoStore['replace']>[0]): Promise<void> {
    const h = this.handle;
    const write = h.transaction(() => {
      const stored = new Map(
        (
          h.prepare(`select name, version from reference_data where name in ('countries', 'cities')`).all() as Array<{
            name: string;
            version: string;
          }>
        ).map((r) => [r.name, r.version]),
      );
      const { countries, cities, versions } = plan(stored);
      const mark = h.prepare(
        `insert into reference_data (name, version, row_count, updated_at) values (?, ?, ?, ?)
         on conflict (name) do update set version = excluded.version, row_count = excluded.row_count, updated_at = excluded.updated_at`,
      );
      if (countries) {
        h.prepare('delete from country_names').run();
        h.prepare('delete from countries').run();
        const country = h.prepare('insert into countries (code, name, native_name, continent, phone_prefix) values (?, ?, ?, ?, ?)');
        const name = h.prepare('insert into country_names (name_norm, code) values (?, ?)');
        for (const c of countries) {
          country.run(c.code, c.name, c.nativeName, c.continent, c.phonePrefix);
          for (const n of [...c.names, ...c.otherNames]) name.run(n, c.code);
        }
        mark.run('countries', versions.countries, countries.length, now());
      }
      if (cities) {
        h.prepare('delete from city_names').run();
        h.prepare('delete from cities').run();
        const city = h.prepare(
          'insert into cities (id, name, country_code, admin1, lat, lon, population, feature_code) values (?, ?, ?, ?, ?, ?, ?, ?)',
        );
        const name = h.prepare('insert into city_names (name_norm, city_id) values (?, ?)');
        for (const c of cities) {
          city.run(c.id, c.name, c.countryCode, c.admin1, c.lat, c.lon, c.population, c.featureCode);
          for (const n of c.names) name.run(n, c.id);
        }
        mark.run('cities', versions.cities, cities.length, now());
      }
    });
    // IMMEDIATE takes the write lock before reading the versions, so a concurrent sync waits and then sees ours.
    write.immediate();
  }
}

/** Rows per statement: arrays go in as one parameter per column through unnest, so only memory bounds this. */
const PG_CHUNK = 20_000;

function chunks<T>(rows: T[], size = PG_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

class PostgresGeoStore implements GeoStore {
  constructor(private readonly kysely: Kysely<Database>) {}

  async replace(plan: Parameters<GeoStore['replace']>[0]): Promise<void> {
    await this.kysely.transaction().execute(async (trx) => {
      // Serialises concurrent syncs across processes until this transaction ends.
      await sql`select pg_advisory_xact_lock(hashtext('leadatlas.reference.geo'))`.execute(trx);
      const stored = new Map(
        (await trx.selectFrom('reference_data').select(['name', 'version']).where('name', 'in', ['countries', 'cities']).execute()).map(
          (r) => [r.name, r.version],
        ),
      );
      const { countries, cities, versions } = plan(stored);
      const mark = (name: ReferenceName, version: string, rowCount: number) =>
        trx
          .insertInto('reference_data')
          .values({ name, version, row_count: rowCount, updated_at: now() })
          .onConflict((oc) => oc.column('name').doUpdateSet({ version, row_count: rowCount, updated_at: now() }))
          .execute();
      if (countries) {
        await sql`truncate table country_names, countries`.execute(trx);
        for (const part of chunks(countries)) {
          await sql`insert into countries (code, name, native_name, continent, phone_prefix)
            select * from unnest(${part.map((c) => c.code)}::text[], ${part.map((c) => c.name)}::text[], ${part.map((c) => c.nativeName)}::text[],
              ${part.map((c) => c.continent)}::text[], ${part.map((c) => c.phonePrefix)}::text[])`.execute(trx);
        }
        for (const part of chunks(countries.flatMap((c) => [...c.names, ...c.otherNames].map((n) => [n, c.code] as const)))) {
          await sql`insert into country_names (name_norm, code)
            select * from unnest(${part.map((p) => p[0])}::text[], ${part.map((p) => p[1])}::text[])`.execute(trx);
        }
        await mark('countries', versions.countries, countries.length);
      }
      if (cities) {
        await sql`truncate table city_names, cities`.execute(trx);
        for (const part of chunks(cities)) {
          await sql`insert into cities (id, name, country_code, admin1, lat, lon, population, feature_code)
            select * from unnest(${part.map((c) => c.id)}::bigint[], ${part.map((c) => c.name)}::text[], ${part.map((c) => c.countryCode)}::text[],
              ${part.map((c) => c.admin1)}::text[], ${part.map((c) => c.lat)}::float8[], ${part.map((c) => c.lon)}::float8[],
              ${part.map((c) => c.population)}::int[], ${part.map((c) => c.featureCode)}::text[])`.execute(trx);
        }
        for (const part of chunks(cities.flatMap((c) => c.names.map((n) => [n, c.id] as const)))) {
          await sql`insert into city_names (name_norm, city_id)
            select * from unnest(${part.map((p) => p[0])}::text[], ${part.map((p) => p[1])}::bigint[])`.execute(trx);
        }
        await mark('cities', versions.cities, cities.length);
      }
    });
  }
}

export const geoStore = byDialect<GeoStore>({
  sqlite: (db) => new SqliteGeoStore(db.sqlite),
  postgres: (db) => new PostgresGeoStore(db.kysely),
});

/** The most populous gazetteer places inside the box (degrees), for a map's labels. */
export function largestCitiesInBox(
  db: Db,
  box: { south: number; west: number; north: number; east: number },
  limit: number,
): Promise<Array<{ name: string; lat: number; lon: number }>> {
  return db.kysely
    .selectFrom('cities')
    .select(['name', 'lat', 'lon'])
    .where('lat', '>=', box.south)
    .where('lat', '<=', box.north)
    .where('lon', '>=', box.west)
    .where('lon', '<=', box.east)
    .orderBy('population', 'desc')
    .limit(limit)
    .execute();
}

/** Names and countries of gazetteer cities by GeoNames id (ids it does not know are left out), for labels. */
export function citiesByIds(db: Db, ids: readonly number[]): Promise<Array<{ id: number; name: string; country_code: string }>> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.kysely
    .selectFrom('cities')
    .select(['id', 'name', 'country_code'])
    .where('id', 'in', [...ids])
    .execute();
}

/**
 * Every folded name (exonyms included) of the cities of `ids` with each city's own name and country, in batches
 * (`city_names` has no index on the city: one scan of it per batch).
 */
export async function namesOfCities(
  db: Db,
  ids: readonly number[],
): Promise<Array<{ id: number; name: string; country_code: string; name_norm: string }>> {
  const out: Array<{ id: number; name: string; country_code: string; name_norm: string }> = [];
  for (let i = 0; i < ids.length; i += 5000) {
    const rows = await db.kysely
      .selectFrom('city_names')
      .innerJoin('cities', 'cities.id', 'city_names.city_id')
      .select(['cities.id', 'cities.name', 'cities.country_code', 'city_names.name_norm'])
      .where('city_names.city_id', 'in', ids.slice(i, i + 5000))
      .execute();
    for (const r of rows) out.push({ id: Number(r.id), name: r.name, country_code: r.country_code, name_norm: r.name_norm });
  }
  return out;
}
