import type SQLite from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import type { Database } from '../../infra/db/schema.ts';
import type { CategoryNames, NameEntry } from './category-index.ts';
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
  const row = await db.kysely
    .selectFrom('reference_data')
    .select(['version', 'row_count'])
    .where('name', '=', REFERENCE_NAME)
    .executeTakeFirst();
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
      const name = h.prepare('insert into category_names (name_norm, slug, lang, name, is_name, kind) values (?, ?, ?, ?, ?, ?)');
      for (const n of names) name.run(n.norm, n.slug, n.lang, n.name, n.isName ? 1 : 0, n.kind);
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
      const stored = await trx
        .selectFrom('reference_data')
        .select(['version', 'row_count'])
        .where('name', '=', REFERENCE_NAME)
        .executeTakeFirst();
      if (stored?.version === version) return { rows: Number(stored.row_count), changed: false };
      await sql`truncate table category_names, categories`.execute(trx);
      for (const part of chunks(categories)) {
        await sql`insert into categories (slug, parent_slug, preset_id, osm_tags, name)
          select * from unnest(${part.map((c) => c.slug)}::text[], ${part.map((c) => c.parent)}::text[], ${part.map((c) => c.presetId)}::text[],
            ${part.map((c) => JSON.stringify(c.osmTags))}::text[], ${part.map((c) => c.name)}::text[])`.execute(trx);
      }
      for (const part of chunks(names)) {
        await sql`insert into category_names (name_norm, slug, lang, name, is_name, kind)
          select * from unnest(${part.map((n) => n.norm)}::text[], ${part.map((n) => n.slug)}::text[], ${part.map((n) => n.lang)}::text[],
            ${part.map((n) => n.name)}::text[], ${part.map((n) => (n.isName ? 1 : 0))}::int[], ${part.map((n) => n.kind)}::text[])`.execute(
          trx,
        );
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

export const taxonomyStore = byDialect<TaxonomyStore>({
  sqlite: (db) => new SqliteTaxonomyStore(db.sqlite),
  postgres: (db) => new PostgresTaxonomyStore(db.kysely),
});

/** Answers kept per language (fuzzy pools, listings): a handful of languages are ever asked for. */
const PER_LANG_ENTRIES = 8;

function remember<T>(cache: Map<string, T>, key: string, make: () => T): T {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size >= PER_LANG_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
  }
  return value;
}

/**
 * The taxonomy's names read from `category_names` (SQLite) rather than held in memory: about 30 MB of heap
 * in a server process, and three times that while the package's 270 translation files are read to build
 * them. An exact lookup is one query on the primary key (name_norm, …); own names go through the
 * (slug, lang) index. Fuzzy pools and listings scan the table once per language and are kept.
 *
 * Synchronous, like better-sqlite3, since the resolver is; use only when `isCurrent` says the table holds
 * this version's rows with their `kind` (a database only migrated has it empty).
 */
export class SqlCategoryNames implements CategoryNames {
  private readonly byNorm: SQLite.Statement<[string], NameEntry>;
  private readonly ownName: SQLite.Statement<[string, string, string], { lang: string; name: string }>;
  private readonly pool: SQLite.Statement<[string, string], NameEntry>;
  private readonly own: SQLite.Statement<[string, string], { slug: string; lang: string; name: string }>;
  private readonly pools = new Map<string, NameEntry[]>();
  private readonly listings = new Map<string, Map<string, string>>();

  constructor(handle: SQLite.Database) {
    this.byNorm = handle.prepare('SELECT name_norm AS norm, slug, lang, kind FROM category_names WHERE name_norm = ?');
    this.ownName = handle.prepare('SELECT lang, name FROM category_names WHERE slug = ? AND lang IN (?, ?) AND is_name = 1');
    this.pool = handle.prepare(`SELECT name_norm AS norm, slug, lang, kind FROM category_names WHERE lang IN ('en', ?, ?)`);
    this.own = handle.prepare('SELECT slug, lang, name FROM category_names WHERE is_name = 1 AND lang IN (?, ?)');
  }

  /** Whether the table holds the rows of taxonomy `version` (its `kind` filled). */
  static isCurrent(handle: SQLite.Database, version: string): boolean {
    try {
      return handle.prepare(`SELECT 1 FROM reference_data WHERE name = ? AND version = ?`).get(REFERENCE_NAME, version) !== undefined;
    } catch {
      return false;
    }
  }

  withNorm(norm: string): readonly NameEntry[] {
    return this.byNorm.all(norm);
  }

  localName(slug: string, lang: string): string | undefined {
    const rows = this.ownName.all(slug, lang, baseLang(lang));
    return (rows.find((r) => r.lang === lang) ?? rows[0])?.name;
  }

  fuzzyPool(lang: string): readonly NameEntry[] {
    return remember(this.pools, lang, () => this.pool.all(lang, baseLang(lang)));
  }

  localNames(lang: string): ReadonlyMap<string, string> {
    return remember(this.listings, lang, () => {
      const out = new Map<string, string>();
      const rows = this.own.all(lang, baseLang(lang));
      for (const r of rows) if (r.lang === lang) out.set(r.slug, r.name);
      for (const r of rows) if (!out.has(r.slug)) out.set(r.slug, r.name);
      return out;
    });
  }
}

const baseLang = (lang: string): string => lang.split('-')[0]!;

/** The categories' own names and aliases in every locale, as written (autocomplete's category suggestions). */
export function categoryNameRows(db: Db): Promise<Array<{ slug: string; lang: string; name: string }>> {
  return db.kysely.selectFrom('category_names').select(['slug', 'lang', 'name']).where('kind', 'in', ['name', 'alias']).execute();
}
