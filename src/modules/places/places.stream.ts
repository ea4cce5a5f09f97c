import { setImmediate } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { applySqlitePragmas, sqliteCacheSizes, type Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { filtered, type PlaceCriteria } from './places.repository.ts';
import { placeRowToTuple, publicPlaceColumns, type PlaceRow, type PublicPlaceRow, type PublicPlaceValues } from './places.schema.ts';

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
    const query = bulkSelect(db, criteria).orderBy('places.id', 'asc').compile();
    yield* streamFromOwnConnection(path, query.sql, query.parameters, batchSize, false) as AsyncGenerator<BulkPlaceRow[]>;
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

/**
 * `streamPlaces` without an object per row: each place is an array in `publicPlaceColumns` order, as
 * SQLite returns it in raw mode, then `names` when `withNames` (fuzzy text matches are checked on every
 * name; nothing else needs that column). On a million-row export, building row objects cost more than
 * writing the CSV.
 */
export async function* streamPlaceTuples(db: Db, criteria: PlaceCriteria, batchSize: number, withNames: boolean): AsyncGenerator<BulkPlaceTuple[]> {
  const path = ownConnectionPath(db);
  if (path) {
    const query = filtered(db, criteria)
      .select([...publicPlaceColumns.map((c) => `places.${c}` as const), withNames ? 'places.names' : sql<null>`null`.as('names')])
      .orderBy('places.id', 'asc')
      .compile();
    yield* streamFromOwnConnection(path, query.sql, query.parameters, batchSize, true) as AsyncGenerator<BulkPlaceTuple[]>;
    return;
  }
  for await (const rows of streamPlaces(db, criteria, batchSize)) {
    yield rows.map((r) => [...placeRowToTuple(r), withNames ? r.names : null] as BulkPlaceTuple);
  }
}

/** One query streamed in batches from a read-only connection of its own, closed when the caller stops. */
async function* streamFromOwnConnection(path: string, text: string, parameters: readonly unknown[], batchSize: number, raw: boolean): AsyncGenerator<unknown[]> {
  const reader = new SQLite(path, { readonly: true });
  try {
    // One pass over the file: pages are not read twice, so a small page cache does.
    applySqlitePragmas(reader, true, sqliteCacheSizes.stream);
    let batch: unknown[] = [];
    for (const row of reader.prepare(text).raw(raw).iterate(...parameters)) {
      batch.push(row);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
        // Let the event loop run between batches. A client that reads as fast as the export writes never
        // makes the socket push back, and the stream would then go on in microtasks alone: every other
        // request (and V8's incremental GC steps) would wait for the whole export.
        await setImmediate();
      }
    }
    if (batch.length > 0) yield batch;
  } finally {
    reader.close();
  }
}

/**
 * The public columns plus `names` (fuzzy matches are verified on every name): exports read every match,
 * and the other JSON columns (attributes, source categories) would add bytes nobody reads.
 */
export async function findPlacesAfterId(db: Db, criteria: PlaceCriteria, afterId: number, limit: number): Promise<BulkPlaceRow[]> {
  return bulkSelect(db, criteria)
    .where('places.id', '>', afterId)
    .orderBy('places.id', 'asc')
    .limit(limit)
    .execute();
}
