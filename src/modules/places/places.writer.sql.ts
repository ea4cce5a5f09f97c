import { type PlaceRows, placeColumns, placeRowWidth } from './place-record.ts';

/**
 * The statements of the PostgreSQL place writer (places.writer.ts): the staging table a batch is copied into,
 * the one upsert that writes it into `places`, and the run's counters saved in the same transaction.
 */

export const sourceAt = placeColumns.indexOf('source');
export const sourceIdAt = placeColumns.indexOf('source_id');

/**
 * The columns an update of a stored place writes: all but the public id, which follows from the key
 * (`publicPlaceId`) and which a record that is part of a place of several sources has given to its place.
 */
export const updatedColumns = placeColumns.filter((c) => c !== 'public_id');

/** Columns the upsert writes from a batch: those of an update but the key, which a conflicting row has already. */
export const upsertColumns = updatedColumns.filter((c) => c !== 'source' && c !== 'source_id');

/**
 * The staging table of a PostgreSQL connection: a batch's rows, each with its position (`ord`), in the
 * columns and types of `places` (taken from the table itself). Temporary (so unlogged and private to the
 * connection) and emptied by every commit. Each batch's transaction creates it if the connection has none
 * yet (the first batch on a connection, or after a rollback took it away): no state to keep per pooled
 * connection, which a pooler in front of PostgreSQL may swap between transactions.
 */
export const staging = 'pg_temp.la_place_staging';
export const createStaging = `CREATE TEMP TABLE IF NOT EXISTS la_place_staging ON COMMIT DELETE ROWS AS SELECT 0 AS ord, ${placeColumns.join(', ')} FROM places WITH NO DATA`;
export const copyStaging = `COPY ${staging} (ord, ${placeColumns.join(', ')}) FROM STDIN`;

/**
 * The batch from staging into `places`, in one statement, by the SQLite writer's rules ($1: the run, $2:
 * the time):
 * - a new place is inserted, in the batch's order (its id follows the file), seen and imported by the run,
 *   first seen and updated now, closed now if its source says so;
 * - a place whose content hash changed gets every column, the run as importer and seer, updated now,
 *   and `closed_at` kept if it was closed by its source already (else now), or null if it is open again;
 * - an unchanged place only gets the run as its `seen_run_id`; one that a run had retired is open again
 *   (or closed again, as its source says, with the date it kept).
 * A new place and a changed one are due for conflation (`place_match_due`, migration 0025).
 * What each row was is read back in RETURNING: `xmax = 0` on a row the statement inserted, and for the
 * others the row as it was before the statement (a sub-select sees the statement's snapshot, which does not
 * include the statement's own writes): 0 inserted, 1 changed, 2 retired and back, 3 unchanged.
 */
export const upsert = (() => {
  const changed = 'places.content_hash <> excluded.content_hash';
  const retired = "places.closed_reason = 'retired'";
  // A record that is part of a place of several sources stays out of search as itself, changed or back
  // from retirement (`closed_reason = 'merged'`).
  const member = 'places.merged_into IS NOT NULL';
  const set = [
    ...upsertColumns.map((c) => `${c} = CASE WHEN ${changed} THEN excluded.${c} ELSE places.${c} END`),
    `import_run_id = CASE WHEN ${changed} THEN $1 ELSE places.import_run_id END`,
    `updated_at = CASE WHEN ${changed} THEN $2 ELSE places.updated_at END`,
    'seen_run_id = $1',
    `closed_at = CASE WHEN ${member} AND (${changed} OR ${retired}) THEN coalesce(places.closed_at, $2)
       WHEN ${changed} THEN CASE WHEN excluded.closed = 1 THEN coalesce(CASE WHEN places.closed_reason = 'closed' THEN places.closed_at END, $2) END
       WHEN ${retired} THEN CASE WHEN places.closed = 1 THEN places.closed_at END ELSE places.closed_at END`,
    `closed_reason = CASE WHEN ${member} AND (${changed} OR ${retired}) THEN 'merged'
       WHEN ${changed} THEN CASE WHEN excluded.closed = 1 THEN 'closed' END
       WHEN ${retired} THEN CASE WHEN places.closed = 1 THEN 'closed' END ELSE places.closed_reason END`,
  ];
  return `WITH written AS (
    INSERT INTO places (${placeColumns.join(', ')}, import_run_id, first_seen_at, updated_at, seen_run_id, closed_at, closed_reason)
    SELECT ${placeColumns.join(', ')}, $1, $2, $2, $1, CASE WHEN closed = 1 THEN $2 END, CASE WHEN closed = 1 THEN 'closed' END
    FROM ${staging} ORDER BY ord
    ON CONFLICT (source, source_id) DO UPDATE SET ${set.join(',\n      ')}
    RETURNING places.id, CASE WHEN places.xmax = 0 THEN 0 ELSE (
      SELECT CASE WHEN o.content_hash <> places.content_hash THEN 1 WHEN o.closed_reason = 'retired' THEN 2 ELSE 3 END
      FROM places o WHERE o.id = places.id) END AS outcome
  ), due AS (
    INSERT INTO place_match_due (place_id, changed) SELECT id, outcome FROM written WHERE outcome IN (0, 1)
    ON CONFLICT (place_id) DO UPDATE SET changed = greatest(place_match_due.changed, excluded.changed)
  )
  SELECT count(*) FILTER (WHERE outcome = 0)::int AS imported, count(*) FILTER (WHERE outcome IN (1, 2))::int AS updated,
         count(*) FILTER (WHERE outcome = 3)::int AS unchanged
  FROM written`
    .replaceAll('$1', '$1::bigint')
    .replaceAll('$2', '$2::text');
})();

export const saveRunCounters = `UPDATE import_runs SET read_count = $1, imported_count = $2, updated_count = $3, unchanged_count = $4,
  skipped_count = $5, skipped_reasons = $6 WHERE id = $7`;

/**
 * A batch without its repeated places: the same (source, source_id) twice keeps its last version, at the
 * position of its first (as a Map's `set` does). The batch itself when nothing repeats (the usual case).
 */
export function distinctRows(rows: PlaceRows): PlaceRows {
  const v = rows.values;
  /** Position in the result of each place; the row each position takes. */
  const position = new Map<string, number>();
  const picked: number[] = [];
  for (let i = 0, o = 0; i < rows.count; i++, o += placeRowWidth) {
    const key = `${v[o + sourceAt]}\0${v[o + sourceIdAt]}`;
    const at = position.get(key);
    if (at === undefined) {
      position.set(key, picked.length);
      picked.push(i);
    } else {
      picked[at] = i;
    }
  }
  if (picked.length === rows.count) return rows;
  const values: PlaceRows['values'] = [];
  for (const i of picked) for (let j = 0; j < placeRowWidth; j++) values.push(v[i * placeRowWidth + j]!);
  return { count: picked.length, values };
}
