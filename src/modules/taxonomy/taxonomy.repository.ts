import { sql, type Kysely } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';
import type { TaxonomyCategory, TaxonomyName } from './taxonomy.build.ts';

const REFERENCE_NAME = 'categories';

export interface TaxonomyRows {
  categories: readonly TaxonomyCategory[];
  names: readonly TaxonomyName[];
}

export interface SyncOutcome {
  rows: number;
  changed: boolean;
}

export async function findTaxonomyVersion(db: Db): Promise<{ version: string; rowCount: number } | undefined> {
  const row = await db.kysely.selectFrom('reference_data').select(['version', 'row_count']).where('name', '=', REFERENCE_NAME).executeTakeFirst();
  return row ? { version: row.version, rowCount: Number(row.row_count) } : undefined;
}

/** Replaces `categories` and `category_names` in one transaction. One implementation per dialect: bulk paths differ. */
export interface TaxonomyStore {
  /**
   * Inside a write transaction that holds the reference-data lock: when the stored version is not `version`,
   * replaces both tables with `rows` and records the version. Two processes starting together write once.
   */
  replaceUnlessCurrent(version: string, rows: TaxonomyRows): Promise<SyncOutcome>;
}

const now = (): string => new Date().toISOString();

class SqliteTaxonomyStore implements TaxonomyStore {
  constructor(private readonly handle: NonNullable<Db['sqlite']>) {}

  async replaceUnlessCurrent(version: string, { categories, names }: TaxonomyRows): Promise<SyncOutcome> {
    const h = this.handle;
    const write = h.transaction((): SyncOutcome => {
      const stored = h.prepare('select version, row_count from reference_data where name = ?').get(REFERENCE_NAME) as
        | { version: string; row_count: number }
        | undefined;
      if (stored?.version === version) return { rows: stored.row_count, changed: false };
      h.prepare('delete from category_names').run();
      h.prepare('delete from categories').run();
      const category = h.prepare('insert into categories (slug, parent_slug, preset_id, osm_tags, name) values (?, ?, ?, ?, ?)');
      for (const c of categories) category.run(c.slug, c.parent, c.presetId, JSON.stringify(c.osmTags), c.name);
      const name = h.prepare('insert into category_names (name_norm, slug, lang, name, is_name) values (?, ?, ?, ?, ?)');
      for (const n of names) name.run(n.norm, n.slug, n.lang, n.name, n.isName ? 1 : 0);
      const count = categories.length + names.length;
      h.prepare(
        `insert into reference_data (name, version, row_count, updated_at) values (?, ?, ?, ?)
         on conflict (name) do update set version = excluded.version, row_count = excluded.row_count, updated_at = excluded.updated_at`,
      ).run(REFERENCE_NAME, version, count, now());
      return { rows: count, changed: true };
    });
    // IMMEDIATE takes the write lock before reading the version, so a concurrent sync waits and then sees ours.
    return write.immediate();
  }
}

/** Rows per statement: arrays go in as one parameter per column through unnest, so only memory bounds this. */
const PG_CHUNK = 20_000;

function chunks<T>(rows: readonly T[], size = PG_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

class PostgresTaxonomyStore implements TaxonomyStore {
  constructor(private readonly kysely: Kysely<Database>) {}

  async replaceUnlessCurrent(version: string, { categories, names }: TaxonomyRows): Promise<SyncOutcome> {
    return this.kysely.transaction().execute(async (trx) => {
      // Serialises concurrent syncs across processes until this transaction ends.
      await sql`select pg_advisory_xact_lock(hashtext('leadatlas.reference.categories'))`.execute(trx);
      const stored = await trx.selectFrom('reference_data').select(['version', 'row_count']).where('name', '=', REFERENCE_NAME).executeTakeFirst();
      if (stored?.version === version) return { rows: Number(stored.row_count), changed: false };
      await sql`truncate table category_names, categories`.execute(trx);
      for (const part of chunks(categories)) {
        await sql`insert into categories (slug, parent_slug, preset_id, osm_tags, name)
          select * from unnest(${part.map((c) => c.slug)}::text[], ${part.map((c) => c.parent)}::text[], ${part.map((c) => c.presetId)}::text[],
            ${part.map((c) => JSON.stringify(c.osmTags))}::text[], ${part.map((c) => c.name)}::text[])`.execute(trx);
      }
      for (const part of chunks(names)) {
        await sql`insert into category_names (name_norm, slug, lang, name, is_name)
          select * from unnest(${part.map((n) => n.norm)}::text[], ${part.map((n) => n.slug)}::text[], ${part.map((n) => n.lang)}::text[],
            ${part.map((n) => n.name)}::text[], ${part.map((n) => (n.isName ? 1 : 0))}::int[])`.execute(trx);
      }
      const count = categories.length + names.length;
      await trx
        .insertInto('reference_data')
        .values({ name: REFERENCE_NAME, version, row_count: count, updated_at: now() })
        .onConflict((oc) => oc.column('name').doUpdateSet({ version, row_count: count, updated_at: now() }))
        .execute();
      return { rows: count, changed: true };
    });
  }
}

export function taxonomyStore(db: Db): TaxonomyStore {
  if (db.dialect === 'sqlite') {
    if (!db.sqlite) throw new Error('an SQLite database without its better-sqlite3 handle');
    return new SqliteTaxonomyStore(db.sqlite);
  }
  return new PostgresTaxonomyStore(db.kysely);
}
