import { setImmediate } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { type SelectQueryBuilder, sql } from 'kysely';
import { applySqlitePragmas, type Db, sqliteCacheSizes } from '../../../infra/db/database.ts';
import { registerBudgetFunction } from '../../../infra/db/deadline.ts';
import { byDialect } from '../../../infra/db/dialect.ts';
import type { Database } from '../../../infra/db/schema.ts';
import {
  type PlaceRow,
  type PublicPlaceRow,
  type PublicPlaceValues,
  placeRowToTuple,
  publicPlaceColumns,
} from '../../places/places.schema.ts';
import { filtered } from './criteria.sql.ts';
import type { PlaceCriteria } from './criteria.ts';

/**
 * Bulk reads of places for exports: every match of a search, in id order (the stable order exports
 * iterate in), with the public columns. The filters are the search side's (`filtered` in places.repository.ts).
 */

/**
 * Where a bulk read can stream one query from a connection of its own: an SQLite file. PostgreSQL (and
 * an in-memory SQLite database, which a second connection cannot open) read keyset pages instead.
 */
const ownConnectionPath = byDialect<string | null>({ sqlite: (db) => db.sqlitePath ?? null, postgres: () => null });

/** What a bulk read returns: the public columns, plus `names` for verifying fuzzy matches. */
export type BulkPlaceRow = PublicPlaceRow & Pick<PlaceRow, 'names'>;

function bulkSelect(db: Db, criteria: PlaceCriteria) {
  return filtered(db, criteria).select([...publicPlaceColumns.map((c) => `places.${c}` as const), 'places.names']);
}

/**
 * Every place matching, in id order, in batches of `batchSize`, for exports.
 * SQLite: one query, streamed from a read-only connection of its own (WAL gives it a stable snapshot,
 * and the shared connection stays free). Keyset pages would re-read the matches before each page,
 * which is quadratic whenever the filter's index is not in id order (a city, a country, a bbox).
 * PostgreSQL: keyset pages.
 */
export async function* streamPlaces(db: Db, criteria: PlaceCriteria, batchSize: number): AsyncGenerator<BulkPlaceRow[]> {
  const path = ownConnectionPath(db);
  if (path) {
    const query = (afterId: number) => idOrdered(bulkSelect(db, criteria), afterId).compile();
    yield* streamFromOwnConnection(path, query, batchSize, (row) => (row as BulkPlaceRow).id, false) as AsyncGenerator<BulkPlaceRow[]>;
    return;
  }
  let afterId = 0;
  for (;;) {
    const rows = await findPlacesAfterId(db, criteria, afterId, batchSize);
    if (rows.length > 0) yield rows;
    if (rows.length < batchSize) return;
    afterId = rows[rows.length - 1]!.id;
  }
}

/** A public row as an array (`PublicPlaceTuple`), then `names` when asked for (else null). */
export type BulkPlaceTuple = [...PublicPlaceValues, names: string | null];
/** Where `names` sits in a `BulkPlaceTuple`. */
export const bulkNamesIndex = publicPlaceColumns.length;
const tupleIdIndex = publicPlaceColumns.indexOf('id');

/**
 * `streamPlaces` without an object per row: each place is an array in `publicPlaceColumns` order, as
 * SQLite returns it in raw mode, then `names` when `withNames` (fuzzy text matches are checked on every
 * name; nothing else needs that column). On a million-row export, building row objects cost more than
 * writing the CSV.
 */
export async function* streamPlaceTuples(
  db: Db,
  criteria: PlaceCriteria,
  batchSize: number,
  withNames: boolean,
): AsyncGenerator<BulkPlaceTuple[]> {
  const path = ownConnectionPath(db);
  if (path) {
    const select = filtered(db, criteria).select([
      ...publicPlaceColumns.map((c) => `places.${c}` as const),
      withNames ? 'places.names' : sql<null>`null`.as('names'),
    ]);
    const query = (afterId: number) => idOrdered(select, afterId).compile();
    yield* streamFromOwnConnection(path, query, batchSize, (row) => (row as unknown[])[tupleIdIndex] as number, true) as AsyncGenerator<
      BulkPlaceTuple[]
    >;
    return;
  }
  for await (const rows of streamPlaces(db, criteria, batchSize)) {
    yield rows.map((r) => [...placeRowToTuple(r), withNames ? r.names : null] as BulkPlaceTuple);
  }
}

/**
 * In id order, after `afterId` when resuming. The first query has no id condition, so the planner
 * picks its plan from the filters alone, as for a count.
 */
function idOrdered<O>(select: SelectQueryBuilder<Database, 'places', O>, afterId: number): SelectQueryBuilder<Database, 'places', O> {
  return (afterId > 0 ? select.where('places.id', '>', afterId) : select).orderBy('places.id', 'asc');
}

/**
 * A reader whose consumer has not asked for the next batch for this long lets go of its snapshot: it
 * closes its statement and connection, and continues after the last id it gave on a fresh one when asked.
 * A slow or stalled download (the export waits on its client) would otherwise keep a read transaction
 * open, and the write-ahead log could not be checkpointed past it: it would grow with every write.
 */
const releaseSnapshotAfterMs = 1000;

/**
 * One query streamed in batches from a read-only connection of its own, closed when the caller stops;
 * released while the caller does not ask for more (see `releaseSnapshotAfterMs`) and resumed after the
 * last row's id. Rows that changed while released are read as they are then.
 */
async function* streamFromOwnConnection(
  path: string,
  queryAfter: (afterId: number) => { sql: string; parameters: readonly unknown[] },
  batchSize: number,
  idOf: (row: unknown) => number,
  raw: boolean,
): AsyncGenerator<unknown[]> {
  let reader: SQLite.Database | undefined;
  let rows: IterableIterator<unknown> | undefined;
  let lastId = 0;
  const open = () => {
    reader = new SQLite(path, { readonly: true });
    // One pass over the file: pages are not read twice, so a small page cache does.
    applySqlitePragmas(reader, true, sqliteCacheSizes.stream);
    // The search's SQL checks a time budget (none here: an export runs as long as its client reads).
    registerBudgetFunction(reader);
    const query = queryAfter(lastId);
    rows = reader
      .prepare(query.sql)
      .raw(raw)
      .iterate(...query.parameters);
  };
  const release = () => {
    rows?.return?.();
    reader?.close();
    rows = undefined;
    reader = undefined;
  };
  try {
    open();
    for (;;) {
      if (!rows) open();
      const batch: unknown[] = [];
      for (let next = rows!.next(); !next.done; next = rows!.next()) {
        batch.push(next.value);
        if (batch.length >= batchSize) break;
      }
      if (batch.length === 0) return;
      lastId = idOf(batch[batch.length - 1]);
      const idle = setTimeout(release, releaseSnapshotAfterMs);
      idle.unref();
      yield batch;
      clearTimeout(idle);
      if (batch.length < batchSize) return;
      // Let the event loop run between batches. A client that reads as fast as the export writes never
      // makes the socket push back, and the stream would then go on in microtasks alone: every other
      // request (and V8's incremental GC steps) would wait for the whole export.
      await setImmediate();
    }
  } finally {
    release();
  }
}

/**
 * The public columns plus `names` (fuzzy matches are verified on every name): exports read every match,
 * and the other JSON columns (attributes, source categories) would add bytes nobody reads.
 */
export async function findPlacesAfterId(db: Db, criteria: PlaceCriteria, afterId: number, limit: number): Promise<BulkPlaceRow[]> {
  return bulkSelect(db, criteria).where('places.id', '>', afterId).orderBy('places.id', 'asc').limit(limit).execute();
}
