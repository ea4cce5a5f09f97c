import type SQLite from 'better-sqlite3';
import { byDialect, type PostgresDb, type SqliteDb } from '../../infra/db/dialect.ts';
import { copyIn, copyTextOf } from '../../infra/db/pg-copy.ts';
import { searchDocument } from '../../infra/text.ts';
import { type PlaceRecord, type PlaceRows, placeColumns, placeRowsOf, placeRowWidth } from './place-record.ts';
import { cityFold } from './place-text.ts';
import {
  copyStaging,
  createStaging,
  distinctRows,
  saveRunCounters,
  sourceAt,
  sourceIdAt,
  updatedColumns,
  upsert,
} from './places.writer.sql.ts';

export interface BatchResult {
  imported: number;
  updated: number;
  unchanged: number;
}

/** Places to write: flat rows (what an import's chunks carry) or records. */
export type PlaceBatch = PlaceRows | readonly PlaceRecord[];

/**
 * Upserts places by (source, source_id); unchanged rows (same content hash) only get the run as their
 * `seen_run_id` (what retirement compares, `import-runs.repository.ts`), and one that was retired is open
 * again (or closed, if its source says so). A record the source marks closed gets `closed_at` (kept while
 * it stays closed) and `closed_reason = 'closed'`. Batches are
 * added to a transaction that commits together with the run's counters, so the counters never disagree
 * with the data: SQLite keeps one transaction open over the batches added until `commit`, PostgreSQL
 * commits each batch as it is added (`pending` stays 0 there).
 */
export interface PlaceWriter {
  /** Writes a batch, opening a transaction if none is open. `counters`: the run's totals before this batch. */
  add(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult>;
  /** Places added to the open transaction. */
  readonly pending: number;
  /**
   * Fills the search indexes for the new places added so far, inside the open transaction (the commit
   * does the rest): for a caller with nothing else to do, e.g. waiting for its next batch, so that the
   * commit is left a shorter tail. A no-op where each batch commits on its own.
   */
  index(): Promise<void>;
  /** Commits the open transaction, its batches fully indexed and the run's counters brought up to date. */
  commit(): Promise<void>;
  /** Drops what the open transaction wrote. An error in `add` or `commit` has already rolled it back. */
  rollback(): Promise<void>;
  /** One batch in a transaction of its own. */
  writeBatch(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult>;
  /**
   * Sets the connection up for a long import (`large`: a file of many MB) and returns what sets it back.
   * A no-op where there is nothing to tune.
   */
  tuneForImport(large: boolean): () => void;
}

/** Counters stored on the import run in the same transaction as the batch, so they never disagree with the data. */
export interface RunCounters {
  read_count: number;
  imported_count: number;
  updated_count: number;
  unchanged_count: number;
  skipped_count: number;
  skipped_reasons: Record<string, number>;
}

/** The place writer of the database's dialect: one long transaction over many batches (SQLite), or a transaction a batch (PostgreSQL). */
export const createPlaceWriter = byDialect<PlaceWriter>({
  sqlite: (db) => new SqlitePlaceWriter(db),
  postgres: (db) => new PostgresPlaceWriter(db),
});

/**
 * Places per chunk the reading side hands the writer. SQLite: small, because a chunk lives through the
 * garbage collections that happen while it is built and written, and every young-generation collection
 * copies it. PostgreSQL commits every chunk, so there a chunk is a transaction and larger ones commit
 * less often.
 */
export const placeWriterChunkSize = byDialect({ sqlite: () => 500, postgres: () => 5000 });

const isRecords = (batch: PlaceBatch): batch is readonly PlaceRecord[] => Array.isArray(batch);
const asRows = (batch: PlaceBatch): PlaceRows => (isRecords(batch) ? placeRowsOf(batch) : batch);

/** The per-row triggers of `places` (migrations 0007, 0017, 0027, 0028) whose work the SQLite writer does set-wise instead. */
const replacedTriggers = ['places_search_ai', 'places_search_au_document', 'places_version_insert', 'places_version_update'];

const hashAt = placeColumns.indexOf('content_hash');
const closedAt = placeColumns.indexOf('closed');
const publicIdAt = placeColumns.indexOf('public_id');
const nameAt = placeColumns.indexOf('name');
const namesAt = placeColumns.indexOf('names');
const cityAt = placeColumns.indexOf('city');
const citySourceAt = placeColumns.indexOf('city_source');

/** What the writer reads of a stored place: id, content hash, closed reason, closed at, the place it is merged into. */
type Existing = [number, string, string | null, string | null, number | null];

interface OpenTransaction {
  runId: number;
  /** The largest place id before the transaction: rows above it are new (rowids grow, SQLite has one writer). */
  before: number;
  /** New rows up to this id are in the search indexes already (by `index()`; the commit indexes the rest). */
  indexed: number;
  /** Rows inserted since the last indexing. */
  unindexed: number;
  /** Places that existed before the transaction, or that it has indexed already, and changed: indexed again at the commit. */
  changed: number[];
  /** Places that existed before the transaction and that it changed or brought back: logged at the commit. */
  updated: number[];
  written: number;
  added: number;
  /** The run's counters as they stand after the last batch added, in saveCounters' order. */
  counters: unknown[];
  /** CREATE statements of the triggers taken off for the transaction, put back before it commits. */
  triggers: string[];
  /** places_fts's own `hashsize` before the transaction raised it (null: FTS5's default). */
  ftsHashSize: number | null;
}

/**
 * FTS5 buffers new index terms in memory and writes them out as a segment whenever the buffer passes
 * `hashsize` (1 MB by default), merging segments as they pile up. An import transaction raises it so
 * that its terms go out in a few large segments, and sets it back before it
 * commits: the setting is stored with the table, and nobody else sees the raised value.
 */
const IMPORT_FTS_HASH_SIZE = 32 * 1024 * 1024;

/** WAL pages between automatic checkpoints while an import writes (SQLite's default is 1,000: 4 MB). */
const IMPORT_CHECKPOINT_PAGES = 25_000;

/** Page cache while a large import writes, in KiB. */
const IMPORT_CACHE_KIB = 65_536;
const FTS_DEFAULT_HASH_SIZE = 1024 * 1024;

/**
 * SQLite: prepared statements, one synchronous write per batch, and one transaction over as many batches
 * as the caller adds before it commits (an import commits every ~50,000 places: each commit writes every
 * page the batches dirtied, and the indexes on random keys dirty pages all over the file).
 *
 * The per-row triggers that keep places_fts and places_version in step are dropped at the start of the
 * transaction and created again, from their own SQL in sqlite_master, just before it commits; in
 * between, places_fts, places_version and the change log (place_changes) are filled set-wise for exactly
 * the rows the transaction wrote (the coordinates' index, migration 0013, is an index of places: SQLite keeps it with the row). A
 * trigger costs every INSERT a sub-program call even when it does nothing, which is why they are taken
 * off rather than switched off. Other connections only ever see committed schemas: with the triggers,
 * and with every committed place indexed. A transaction
 * that does not commit (error, crash, kill -9) leaves nothing behind, triggers included.
 *
 * While a transaction is open it holds SQLite's write lock and the connection: whatever else runs on
 * this connection in the meantime joins it. The importer is alone on its connection (CLI, or the
 * server's start before it listens).
 */
class SqlitePlaceWriter implements PlaceWriter {
  private open: OpenTransaction | undefined;
  private readonly h: SQLite.Database;
  private readonly writeRows: (rows: PlaceRows, open: OpenTransaction) => BatchResult;
  private readonly indexNew: (open: OpenTransaction) => void;
  private readonly finish: (open: OpenTransaction) => void;
  private readonly triggerSql: SQLite.Statement<[], { name: string; sql: string }>;
  private readonly lastId: SQLite.Statement<[], number>;
  private readonly ftsHashSize: SQLite.Statement<[], number>;
  private readonly setFtsHashSize: (size: number) => void;

  constructor(db: SqliteDb) {
    const h = (this.h = db.sqlite);
    this.triggerSql = h.prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'places' AND name IN (${replacedTriggers.map((n) => `'${n}'`).join(', ')})`,
    );
    this.lastId = h.prepare<[], number>('SELECT coalesce(max(id), 0) FROM places').pluck();
    const existing = h
      .prepare<[unknown, unknown], Existing>(
        'SELECT id, content_hash, closed_reason, closed_at, merged_into FROM places WHERE source = ? AND source_id = ?',
      )
      .raw();
    // After the record's values: the run (import_run_id), first seen (insert only), updated_at, the run
    // again (seen_run_id), closed_at and closed_reason, the stored text (`place-text.ts`); then the row id (update).
    const insert = h.prepare(
      `INSERT INTO places (${placeColumns.join(', ')}, import_run_id, first_seen_at, updated_at, seen_run_id, closed_at, closed_reason,
       search_document, city_fold) VALUES (${placeColumns.map(() => '?').join(', ')}, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Every column but the public id, which follows from the key (and which a record that is part of a place
    // of several sources has given to its place).
    const update = h.prepare(
      `UPDATE places SET ${updatedColumns.map((c) => `${c} = ?`).join(', ')}, import_run_id = ?, updated_at = ?, seen_run_id = ?,
       closed_at = ?, closed_reason = ?, search_document = ?, city_fold = ? WHERE id = ?`,
    );
    // An unchanged place: only the run that saw it. One that a run of its dataset had retired is back:
    // open again, or closed again if its source says so (with the date it was first found closed).
    const seen = h.prepare('UPDATE places SET seen_run_id = ? WHERE id = ?');
    // A new record, or one whose content changed, is due for conflation (migration 0025, `conflation/`).
    const dueNew = h.prepare('INSERT INTO place_match_due (place_id, changed) VALUES (?, 0) ON CONFLICT (place_id) DO NOTHING');
    const dueChanged = h.prepare(
      'INSERT INTO place_match_due (place_id, changed) VALUES (?, 1) ON CONFLICT (place_id) DO UPDATE SET changed = 1',
    );
    // A record of a place of several sources is back in that place, not on its own (`merged`).
    const back = h.prepare(
      `UPDATE places SET seen_run_id = ?, closed_reason = CASE WHEN merged_into IS NOT NULL THEN 'merged' WHEN closed = 1 THEN 'closed' END,
       closed_at = CASE WHEN merged_into IS NOT NULL OR closed = 1 THEN closed_at END WHERE id = ?`,
    );
    const saveCounters = h.prepare(
      `UPDATE import_runs SET read_count = ?, imported_count = ?, updated_count = ?, unchanged_count = ?,
       skipped_count = ?, skipped_reasons = ? WHERE id = ?`,
    );
    // Rows inserted by the transaction and not indexed yet: id > the largest id before it, or than the last indexed.
    const newNames = h.prepare('INSERT INTO places_fts (rowid, names) SELECT id, search_document FROM places WHERE id > ?');
    // Rows that existed before the transaction (or were indexed in it) and changed: ids as a JSON array.
    const oldNames = h.prepare('DELETE FROM places_fts WHERE rowid IN (SELECT value FROM json_each(?))');
    const changedNames = h.prepare(
      'INSERT INTO places_fts (rowid, names) SELECT id, search_document FROM places WHERE id IN (SELECT value FROM json_each(?))',
    );
    const bumpVersion = h.prepare('UPDATE places_version SET version = version + ? WHERE id = 1');
    // The change log (migration 0028) as the per-row triggers write it, at the version the commit moves to.
    const logNew = h.prepare(
      'INSERT INTO place_changes (version, place_id) SELECT (SELECT version FROM places_version WHERE id = 1), id FROM places WHERE id > ?',
    );
    const logUpdated = h.prepare(
      `INSERT INTO place_changes (version, place_id)
       SELECT DISTINCT (SELECT version FROM places_version WHERE id = 1), value FROM json_each(?)`,
    );
    const setFtsHashSize = h.prepare("INSERT INTO places_fts (places_fts, rank) VALUES ('hashsize', ?)");
    this.ftsHashSize = h.prepare<[], number>("SELECT v FROM places_fts_config WHERE k = 'hashsize'").pluck();
    // A whole number for FTS5: better-sqlite3 binds a JS number as a float.
    this.setFtsHashSize = (size) => setFtsHashSize.run(BigInt(size));

    // Whether a source had no place when this writer first met it (before writing any of its rows).
    const anyOfSource = h.prepare<[unknown], number>('SELECT 1 FROM places WHERE source = ? LIMIT 1').pluck();
    const freshSources = new Map<unknown, boolean>();
    const isFresh = (source: unknown): boolean => {
      let fresh = freshSources.get(source);
      if (fresh === undefined) freshSources.set(source, (fresh = anyOfSource.get(source) === undefined));
      return fresh;
    };

    /**
     * One row's parameters: its values, then the run id, the time and the time (insert) or the row id
     * (update). Reused row after row and passed spread, as separate arguments: better-sqlite3 reads an
     * array argument element by element through V8's API, which costs far more, and a new array per row
     * would be garbage to collect.
     */
    const insertParams: unknown[] = new Array(placeRowWidth + 8);
    const updateParams: unknown[] = new Array(updatedColumns.length + 8);
    const document = (v: PlaceRows['values'], o: number): string =>
      searchDocument(v[o + nameAt] as string, v[o + namesAt] as string | null);
    const city = (v: PlaceRows['values'], o: number): string | null =>
      cityFold(v[o + cityAt] as string | null, v[o + citySourceAt] as string | null);
    const fillInsert = (v: PlaceRows['values'], o: number, runId: number, now: string): unknown[] => {
      const params = insertParams;
      for (let j = 0; j < placeRowWidth; j++) params[j] = v[o + j];
      const closed = v[o + closedAt] === 1;
      params[placeRowWidth] = runId;
      params[placeRowWidth + 1] = now;
      params[placeRowWidth + 2] = now;
      params[placeRowWidth + 3] = runId;
      params[placeRowWidth + 4] = closed ? now : null;
      params[placeRowWidth + 5] = closed ? 'closed' : null;
      params[placeRowWidth + 6] = document(v, o);
      params[placeRowWidth + 7] = city(v, o);
      return params;
    };
    const fillUpdate = (v: PlaceRows['values'], o: number, runId: number, now: string, found: Existing): unknown[] => {
      const params = updateParams;
      for (let j = 0, k = 0; j < placeRowWidth; j++) if (j !== publicIdAt) params[k++] = v[o + j];
      const closed = v[o + closedAt] === 1;
      const n = updatedColumns.length;
      params[n] = runId;
      params[n + 1] = now;
      params[n + 2] = runId;
      if (found[4] !== null) {
        // A record of a place of several sources stays out of search as itself: its place shows it.
        params[n + 3] = found[3] ?? now;
        params[n + 4] = 'merged';
      } else {
        // Closed by its source: since it was first found closed (the date survives other changes and a retirement).
        params[n + 3] = closed ? (found[2] === 'closed' ? found[3] : now) : null;
        params[n + 4] = closed ? 'closed' : null;
      }
      params[n + 5] = document(v, o);
      params[n + 6] = city(v, o);
      params[n + 7] = found[0];
      return params;
    };

    this.writeRows = (rows, open) => {
      const result: BatchResult = { imported: 0, updated: 0, unchanged: 0 };
      const now = new Date().toISOString();
      const v = rows.values;
      for (let i = 0, o = 0; i < rows.count; i++, o += placeRowWidth) {
        let found: Existing | undefined;
        // A source new to the catalog (a first import) inserts without looking first: a place it already
        // wrote (the same one twice in a file) fails the unique key and is looked up then. Any other
        // source looks first: a re-import would fail most of its inserts.
        if (isFresh(v[o + sourceAt])) {
          try {
            dueNew.run(insert.run(...fillInsert(v, o, open.runId, now)).lastInsertRowid);
            open.unindexed++;
            result.imported++;
            continue;
          } catch (error) {
            if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') throw error;
            found = existing.get(v[o + sourceAt], v[o + sourceIdAt]);
            // Not our key (public_id): a real error.
            if (!found) throw error;
          }
        } else {
          found = existing.get(v[o + sourceAt], v[o + sourceIdAt]);
        }
        if (!found) {
          dueNew.run(insert.run(...fillInsert(v, o, open.runId, now)).lastInsertRowid);
          open.unindexed++;
          result.imported++;
        } else if (found[1] !== v[o + hashAt]) {
          update.run(...fillUpdate(v, o, open.runId, now, found));
          dueChanged.run(found[0]);
          if (found[0] <= open.before) open.updated.push(found[0]);
          // A row this transaction inserted and has not indexed yet (the same place twice in a batch) is
          // indexed as a new one; any other is indexed again.
          if (found[0] <= open.indexed) open.changed.push(found[0]);
          result.updated++;
        } else if (found[2] === 'retired') {
          back.run(open.runId, found[0]);
          if (found[0] <= open.before) open.updated.push(found[0]);
          result.updated++;
        } else {
          seen.run(open.runId, found[0]);
          result.unchanged++;
        }
      }
      return result;
    };

    this.indexNew = (open) => {
      if (open.unindexed === 0) return;
      newNames.run(open.indexed);
      open.indexed = this.lastId.get()!;
      open.unindexed = 0;
    };

    this.finish = (open) => {
      this.indexNew(open);
      if (open.changed.length > 0) {
        const ids = JSON.stringify(open.changed);
        oldNames.run(ids);
        changedNames.run(ids);
      }
      // As the per-row triggers count: one step per inserted or updated row.
      if (open.written > 0) {
        bumpVersion.run(open.written);
        logNew.run(open.before);
        if (open.updated.length > 0) logUpdated.run(JSON.stringify(open.updated));
      }
      saveCounters.run(...open.counters, open.runId);
      this.setFtsHashSize(open.ftsHashSize ?? FTS_DEFAULT_HASH_SIZE);
      for (const create of open.triggers) h.exec(create);
    };
  }

  get pending(): number {
    return this.open?.added ?? 0;
  }

  async add(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult> {
    const rows = asRows(batch);
    const open = this.open ?? this.begin(runId);
    if (open.runId !== runId) throw new Error(`place writer: a transaction for run ${open.runId} is open`);
    return this.orAbort(() => {
      const result = this.writeRows(rows, open);
      open.added += rows.count;
      open.written += result.imported + result.updated;
      open.counters = [
        counters.read_count,
        counters.imported_count + result.imported,
        counters.updated_count + result.updated,
        counters.unchanged_count + result.unchanged,
        counters.skipped_count,
        JSON.stringify(counters.skipped_reasons),
      ];
      return result;
    });
  }

  async index(): Promise<void> {
    const open = this.open;
    if (open) this.orAbort(() => this.indexNew(open));
  }

  async commit(): Promise<void> {
    const open = this.open;
    if (!open) return;
    this.orAbort(() => {
      this.finish(open);
      this.h.exec('COMMIT');
      this.open = undefined;
    });
  }

  async rollback(): Promise<void> {
    if (this.open) this.abort();
  }

  /**
   * For the import's duration:
   * - checkpoints every ~100 MB of WAL instead of every 4 MB. Each checkpoint copies back and syncs the
   *   pages the transactions dirtied, and the index on random keys (public ids) dirties pages all over
   *   the file: fewer checkpoints copy each page fewer times. The next commit after the import (the
   *   run's final status) checkpoints with the usual setting again.
   * - for a large file, a larger page cache, so that more of a transaction's dirty pages stay in memory
   *   until it commits instead of spilling into the WAL (and being written again). The pages are
   *   allocated as they are used and freed when the usual size is set back; small files (the server's
   *   demo data at start) keep the connection's cache.
   */
  tuneForImport(large: boolean): () => void {
    const h = this.h;
    const cache = h.pragma('cache_size', { simple: true }) as number;
    const cacheKiB = cache < 0 ? -cache : (cache * (h.pragma('page_size', { simple: true }) as number)) / 1024;
    const raiseCache = large && cacheKiB < IMPORT_CACHE_KIB;
    if (raiseCache) h.pragma(`cache_size = -${IMPORT_CACHE_KIB}`);
    // 0: checkpoints are off (an in-memory database, or turned off on purpose); leave them so.
    const checkpoints = h.pragma('wal_autocheckpoint', { simple: true }) as number;
    if (checkpoints > 0) h.pragma(`wal_autocheckpoint = ${Math.max(checkpoints, IMPORT_CHECKPOINT_PAGES)}`);
    return () => {
      if (raiseCache) h.pragma(`cache_size = ${cache}`);
      if (checkpoints > 0) h.pragma(`wal_autocheckpoint = ${checkpoints}`);
    };
  }

  /** Runs a step of the open transaction; if it throws, the transaction is rolled back first. */
  private orAbort<T>(step: () => T): T {
    try {
      return step();
    } catch (error) {
      this.abort();
      throw error;
    }
  }

  async writeBatch(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult> {
    if (this.open) throw new Error('place writer: a transaction is open; add to it or commit it first');
    const result = await this.add(batch, runId, counters);
    await this.commit();
    return result;
  }

  private begin(runId: number): OpenTransaction {
    this.h.exec('BEGIN IMMEDIATE');
    try {
      const triggers = this.triggerSql.all();
      const ftsHashSize = this.ftsHashSize.get() ?? null;
      this.setFtsHashSize(IMPORT_FTS_HASH_SIZE);
      for (const t of triggers) this.h.exec(`DROP TRIGGER "${t.name}"`);
      const before = this.lastId.get()!;
      this.open = {
        runId,
        before,
        indexed: before,
        unindexed: 0,
        changed: [],
        updated: [],
        written: 0,
        added: 0,
        counters: [],
        triggers: triggers.map((t) => t.sql),
        ftsHashSize,
      };
      return this.open;
    } catch (error) {
      this.h.exec('ROLLBACK');
      throw error;
    }
  }

  private abort(): void {
    this.open = undefined;
    if (this.h.inTransaction) this.h.exec('ROLLBACK');
  }
}

/**
 * PostgreSQL: one transaction per batch, on a client of the pool: the batch is streamed with `COPY … FROM
 * STDIN` into the connection's staging table, then upserted into `places` with one `INSERT … SELECT … ON
 * CONFLICT` (see `upsert`), and the run's counters saved; then it commits. PostgreSQL keeps its own
 * indexes (the trigram index of names, `la_fold`, included) and bumps `places_version` once per statement.
 * A batch that fails (a bad row, a lost connection, kill -9) leaves nothing: the staging rows go with its
 * transaction.
 */
class PostgresPlaceWriter implements PlaceWriter {
  readonly pending = 0;

  constructor(private readonly db: PostgresDb) {}

  add(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult> {
    return this.writeBatch(batch, runId, counters);
  }

  async index(): Promise<void> {}

  async commit(): Promise<void> {}

  async rollback(): Promise<void> {}

  tuneForImport(): () => void {
    return () => {};
  }

  async writeBatch(batch: PlaceBatch, runId: number, counters: RunCounters): Promise<BatchResult> {
    const rows = distinctRows(asRows(batch));
    const now = new Date().toISOString();
    const client = await this.db.pgPool.connect();
    let broken: Error | undefined;
    try {
      await client.query(`BEGIN; ${createStaging}`);
      try {
        let result: BatchResult = { imported: 0, updated: 0, unchanged: 0 };
        if (rows.count > 0) {
          await copyIn(
            client,
            copyStaging,
            copyTextOf(rows.values, placeRowWidth, rows.count, (i) => i),
          );
          result = (await client.query<BatchResult>({ name: 'la_place_upsert', text: upsert, values: [runId, now] })).rows[0]!;
        }
        await client.query({
          name: 'la_place_run_counters',
          text: saveRunCounters,
          values: [
            counters.read_count,
            counters.imported_count + result.imported,
            counters.updated_count + result.updated,
            counters.unchanged_count + result.unchanged,
            counters.skipped_count,
            JSON.stringify(counters.skipped_reasons),
            runId,
          ],
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    } catch (error) {
      // The connection may be mid-COPY or lost: the pool discards it rather than hand it out again.
      broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      client.release(broken);
    }
  }
}
