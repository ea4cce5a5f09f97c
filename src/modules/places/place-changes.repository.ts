import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';

const versionStatements = new WeakMap<object, { get(): unknown }>();

/**
 * Reads the places version. Asked on every search, so SQLite reads it through one prepared statement per
 * connection rather than building the query each time.
 */
const readPlacesVersion = byDialect<() => Promise<number>>({
  sqlite: (db) => {
    let statement = versionStatements.get(db.sqlite);
    if (!statement) {
      statement = db.sqlite.prepare('SELECT version FROM places_version WHERE id = 1').pluck();
      versionStatements.set(db.sqlite, statement);
    }
    const prepared = statement;
    return async () => Number(prepared.get());
  },
  postgres: (db) => async () => {
    const row = await db.kysely
      .withTables<{ places_version: { id: number; version: number } }>()
      .selectFrom('places_version')
      .select('version')
      .where('id', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(row.version);
  },
});

/** Moves whenever `places` changes (migration 0007): what cached counts and pages are checked against. */
export function placesVersion(db: Db): Promise<number> {
  return readPlacesVersion(db)();
}

/** How long the change log keeps a change by default: a reader further behind reloads everything. */
export const PLACE_CHANGES_KEPT_MS = 24 * 60 * 60 * 1000;

export interface PlaceChanges {
  /** The changed places' ids, each once, in ascending order. */
  placeIds: number[];
  /**
   * The version the reader is at once it has applied these changes; the next call continues after it. The
   * places version when the read was complete (a write that logs nothing, an unchanged re-import, moves it too).
   */
  through: number;
  /** False when the log no longer reaches back to `since` (pruned): the reader must reload everything. */
  complete: boolean;
  /** True when `limit` stopped the read: call again from `through`. */
  more: boolean;
}

/**
 * The places changed after `since` (a places version), from the change log (migration 0028), at most about
 * `limit` log rows: the read ends at a version boundary, so a version's changes are never split (one
 * version may hold a whole import's commit, more than `limit`).
 */
export async function placeChangesSince(db: Db, since: number, limit: number): Promise<PlaceChanges> {
  const horizon = await db.kysely.selectFrom('place_changes_horizon').select('pruned_through').where('id', '=', 1).executeTakeFirst();
  if (horizon && since < Number(horizon.pruned_through)) return { placeIds: [], through: since, complete: false, more: false };
  // Read before the log: every change at or below it is committed, so none is missed.
  const current = await placesVersion(db);
  const rows = await db.kysely
    .selectFrom('place_changes')
    .select(['version', 'place_id'])
    .where('version', '>', since)
    .orderBy('version')
    .limit(limit + 1)
    .execute();
  let more = false;
  let end = rows.length;
  if (rows.length > limit) {
    more = true;
    const last = Number(rows[limit]!.version);
    // Cut before the version the limit fell in, unless that version is all there is: then read it whole.
    end = rows.findIndex((r) => Number(r.version) === last);
    if (end === 0) {
      const whole = await db.kysely.selectFrom('place_changes').select(['version', 'place_id']).where('version', '=', last).execute();
      rows.splice(0, rows.length, ...whole);
      end = rows.length;
    }
  }
  const ids = new Set<number>();
  let through = since;
  for (let i = 0; i < end; i++) {
    ids.add(Number(rows[i]!.place_id));
    through = Math.max(through, Number(rows[i]!.version));
  }
  if (!more) through = Math.max(through, current);
  return { placeIds: [...ids].sort((a, b) => a - b), through, complete: true, more };
}

/**
 * Prunes the change log by age: marks the current places version with `now`, and deletes the changes at
 * or below the newest mark older than `keepMs`, moving the horizon there. Safe to call from several
 * processes at once. Returns the number of changes deleted.
 */
export async function prunePlaceChanges(db: Db, now: Date = new Date(), keepMs = PLACE_CHANGES_KEPT_MS): Promise<number> {
  return db.kysely.transaction().execute(async (trx) => {
    const current = await trx
      .withTables<{ places_version: { id: number; version: number } }>()
      .selectFrom('places_version')
      .select('version')
      .where('id', '=', 1)
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('place_changes_marks')
      .values({ version: Number(current.version), marked_at: now.toISOString() })
      .onConflict((oc) => oc.column('version').doNothing())
      .execute();
    const cutoff = await trx
      .selectFrom('place_changes_marks')
      .select((eb) => eb.fn.max('version').as('version'))
      .where('marked_at', '<=', new Date(now.getTime() - keepMs).toISOString())
      .executeTakeFirst();
    if (cutoff?.version === null || cutoff?.version === undefined) return 0;
    const through = Number(cutoff.version);
    const deleted = await trx.deleteFrom('place_changes').where('version', '<=', through).executeTakeFirst();
    await trx
      .updateTable('place_changes_horizon')
      .set({ pruned_through: through })
      .where('id', '=', 1)
      .where('pruned_through', '<', through)
      .execute();
    await trx.deleteFrom('place_changes_marks').where('version', '<', through).execute();
    return Number(deleted.numDeletedRows);
  });
}
