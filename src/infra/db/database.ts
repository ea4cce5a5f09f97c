import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { type DatabaseConnection, type Driver, Kysely, PostgresDialect, SqliteDialect, SqliteDriver } from 'kysely';
import type PgModule from 'pg';
import { foldText, searchDocument } from '../text.ts';
import { registerBudgetFunction } from './deadline.ts';
import type { Database } from './schema.ts';

export type DialectName = 'sqlite' | 'postgres';

/** An open database: the Kysely instance every repository uses, and what differs per dialect. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: DialectName;
  /** The raw better-sqlite3 handle, for the few bulk paths that bypass the query builder (SQLite only). */
  readonly sqlite: SQLite.Database | undefined;
  /**
   * The pool of a PostgreSQL database, for the few bulk paths that need a client of their own (`COPY`
   * streams, `infra/db/pg-copy.ts`); undefined on SQLite.
   */
  readonly pgPool: PgModule.Pool | undefined;
  /** File path of an SQLite database (undefined for `:memory:` and PostgreSQL), so worker threads can open it too. */
  readonly sqlitePath: string | undefined;
  readonly url: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  readonly?: boolean;
  /** SQLite page cache of this connection in KiB (default `sqliteCacheKiB`; see `sqliteCacheSizes`). */
  cacheKiB?: number;
}

/**
 * Pragmas for a write-ahead-logged database shared by one writer and several readers.
 *
 * Memory: a server holds several connections (the shared one, one per read-pool thread, one per running
 * export), and every page a connection keeps counts in the process's resident memory. So no memory map
 * (a map of the 1M-place catalog grew by 210 MB while an export recorded its leads, and one per thread
 * would add up to its size again) and a page cache sized for the connection's role (`sqliteCacheSizes`);
 * the operating system's page cache still keeps the hot file pages, one copy for every connection.
 */
export function applySqlitePragmas(handle: SQLite.Database, readonly = false, cacheKiB = sqliteCacheKiB): void {
  if (!readonly && handle.name !== ':memory:') {
    handle.pragma('journal_mode = WAL');
    // The log grows while a reader holds an old snapshot (a long export) and is rewritten from its start
    // once checkpointed; without a limit the file keeps its largest size for ever.
    handle.pragma(`journal_size_limit = ${walSizeLimitBytes}`);
  }
  handle.pragma('synchronous = NORMAL');
  handle.pragma('foreign_keys = ON');
  handle.pragma('busy_timeout = 10000');
  handle.pragma(`cache_size = -${cacheKiB}`);
  handle.pragma('temp_store = MEMORY');
  handle.pragma('mmap_size = 0');
}

/** The size the write-ahead log file is cut back to when it is rewritten from its start. */
export const walSizeLimitBytes = 8 * 1024 * 1024;

/**
 * The text functions of the application's SQL: the full-text index's document of a place, and the folding
 * of names (PostgreSQL has its own `la_fold`, migration 0011). Since migration 0027 no trigger, index or
 * view calls them (the file opens in any SQLite tool): migrations 0016 and 0027 fill columns with them, and
 * queries may call them.
 */
export function registerTextFunctions(handle: SQLite.Database): void {
  handle.function('la_search_document', { deterministic: true }, (name: unknown, names: unknown) =>
    searchDocument(typeof name === 'string' ? name : String(name ?? ''), typeof names === 'string' ? names : null),
  );
  handle.function('la_fold', { deterministic: true }, (text: unknown) => (typeof text === 'string' ? foldText(text) : text));
}

/** Page cache per connection, in KiB, unless its role asks for another (`sqliteCacheSizes`). */
export const sqliteCacheKiB = 16_384;

/**
 * Page caches of a server's connections, in KiB. The shared connection writes saved searches and leads
 * (appends) and looks up tokens and names: a few MB do. The read-pool threads run the searches, over
 * indexes far larger than any cache here (the OS page cache holds those). An export streams one pass
 * (pages are not read twice). An import writer keeps the default: its index B-trees are written all over.
 */
export const sqliteCacheSizes = { server: 4_096, reader: 8_192, stream: 2_048 } as const;

/** Sizes the page cache of an SQLite connection for its role (`sqliteCacheSizes`); nothing to do on PostgreSQL. */
export function sizeCacheForRole(db: Db, role: keyof typeof sqliteCacheSizes): void {
  db.sqlite?.pragma(`cache_size = -${sqliteCacheSizes[role]}`);
}

/**
 * SQLite's Kysely dialect with one change: a transaction SQLite has already rolled back by itself (it does on
 * SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM…) is not rolled back a second time. Kysely's ROLLBACK would fail
 * with "cannot rollback - no transaction is active", and that error would replace the one that says why: a
 * full disk would reach the caller as a plain error, not as the full disk it is (507, exit status 74).
 */
class SqliteDialectKeepingCause extends SqliteDialect {
  constructor(private readonly handle: SQLite.Database) {
    super({ database: handle });
  }

  override createDriver(): Driver {
    const handle = this.handle;
    return new (class extends SqliteDriver {
      override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
        if (handle.inTransaction) await super.rollbackTransaction(connection);
      }
    })({ database: handle });
  }
}

export function parseSqlitePath(url: string): string {
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  if (path === '') throw new Error(`DATABASE_URL ${url} names no file`);
  return path;
}

export function openDatabase(url: string, options: OpenOptions = {}): Db {
  if (url.startsWith('sqlite:')) {
    const path = parseSqlitePath(url);
    const inMemory = path === ':memory:';
    if (!inMemory && !options.readonly) mkdirSync(dirname(resolve(path)), { recursive: true });
    const handle = new SQLite(path, { readonly: options.readonly ?? false });
    applySqlitePragmas(handle, options.readonly, options.cacheKiB);
    registerTextFunctions(handle);
    registerBudgetFunction(handle);
    const kysely = new Kysely<Database>({ dialect: new SqliteDialectKeepingCause(handle) });
    return {
      kysely,
      dialect: 'sqlite',
      sqlite: handle,
      pgPool: undefined,
      sqlitePath: inMemory ? undefined : resolve(path),
      url,
      close: async () => {
        await kysely.destroy();
      },
    };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    // int8 (counts) as JS numbers: no count in this catalog comes near 2^53.
    // Loaded only for a PostgreSQL URL: about 2.5 MB of heap and 6 MB of resident memory in every thread
    // that opens an SQLite database otherwise (the server's read threads, the import worker).
    const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
    pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
    pg.types.setTypeParser(1700, (v) => Number.parseFloat(v));
    // A request fails fast (503) while the server does not answer instead of waiting on a connection.
    const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 2000 });
    // An idle connection the server dropped (a restart, a failover) is discarded and replaced on the
    // next query; unhandled, the pool's 'error' event would end the process.
    pool.on('error', () => {});
    // A connection lost while a client is checked out between two queries (inside a transaction, or a
    // cursor between reads) emits 'error' on the client, where the pool listens only while it is idle:
    // unheard, that error ends the process. The next query on that client rejects (a 503), and the pool
    // discards the client when it is released.
    pool.on('connect', (client) => client.on('error', () => {}));
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      kysely,
      dialect: 'postgres',
      sqlite: undefined,
      pgPool: pool,
      sqlitePath: undefined,
      url,
      close: async () => {
        await kysely.destroy();
      },
    };
  }
  throw new Error(`DATABASE_URL must start with sqlite: or postgres://, got ${url}`);
}
