import type { Db } from '../../infra/db/database.ts';
import type { PlaceRecord } from './place-record.ts';

export interface BatchResult {
  imported: number;
  updated: number;
  unchanged: number;
}

/** Upserts batches of places by (source, source_id); each batch is one transaction, together with the run's counters. */
export interface PlaceWriter {
  writeBatch(records: PlaceRecord[], runId: number, counters: RunCounters): Promise<BatchResult>;
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

const placeColumns = [
  'public_id', 'source', 'source_id', 'name', 'names', 'category', 'categories', 'source_categories',
  'phone', 'phone_e164', 'website', 'email', 'street', 'housenumber', 'postcode', 'address', 'region',
  'city', 'city_id', 'city_source', 'city_distance_m', 'country_code', 'lat', 'lon', 'rating', 'review_count',
  'opening_hours', 'attributes', 'content_hash',
] as const;

export function createPlaceWriter(db: Db): PlaceWriter {
  return db.dialect === 'sqlite' ? new SqlitePlaceWriter(db) : new KyselyPlaceWriter(db);
}

/**
 * What places_fts holds for a place: its display name and every text value of its `names` JSON. The
 * same expression as the per-row triggers of migration 0010 (the writer test checks they agree).
 */
const ftsNames = `name || coalesce(' ' || (SELECT group_concat(value, ' ') FROM json_tree(places.names) WHERE type = 'text'), '')`;

/**
 * SQLite: prepared statements in one synchronous transaction per batch. better-sqlite3 runs a prepared
 * statement in about a microsecond, far less than building one multi-row INSERT per batch would cost.
 *
 * The search indexes (places_fts, places_geo), place_categories of new rows and places_version are
 * filled set-wise at the end of the batch, inside its transaction: the batch marks itself in
 * `places_deferred_indexing` (migration 0010), which turns the per-row triggers off for this
 * transaction only. New rows are those with an id above the largest id before the batch (rowids grow
 * by one and SQLite has one writer at a time). A batch that commits has its indexes; one that does
 * not leaves nothing behind, so a killed import needs no repair.
 */
class SqlitePlaceWriter implements PlaceWriter {
  private readonly write: (records: PlaceRecord[], runId: number, counters: RunCounters) => BatchResult;

  constructor(db: Db) {
    const h = db.sqlite!;
    const existing = h.prepare<[string, string], { id: number; content_hash: string }>(
      'SELECT id, content_hash FROM places WHERE source = ? AND source_id = ?',
    );
    const insert = h.prepare(
      `INSERT INTO places (${placeColumns.join(', ')}, import_run_id, first_seen_at, updated_at)
       VALUES (${placeColumns.map(() => '?').join(', ')}, ?, ?, ?)`,
    );
    const update = h.prepare(
      `UPDATE places SET ${placeColumns.map((c) => `${c} = ?`).join(', ')}, import_run_id = ?, updated_at = ? WHERE id = ?`,
    );
    const deleteCategories = h.prepare('DELETE FROM place_categories WHERE place_id = ?');
    const insertCategory = h.prepare('INSERT OR IGNORE INTO place_categories (place_id, category, is_primary) VALUES (?, ?, ?)');
    const saveCounters = h.prepare(
      `UPDATE import_runs SET read_count = ?, imported_count = ?, updated_count = ?, unchanged_count = ?,
       skipped_count = ?, skipped_reasons = ? WHERE id = ?`,
    );
    const lastId = h.prepare<[], number>('SELECT coalesce(max(id), 0) FROM places').pluck();
    const defer = h.prepare('INSERT INTO places_deferred_indexing (id) VALUES (1)');
    const undefer = h.prepare('DELETE FROM places_deferred_indexing');
    // Rows inserted by this batch: id > the largest id before it.
    const newCategories = h.prepare(
      `INSERT OR IGNORE INTO place_categories (place_id, category, is_primary)
       SELECT places.id, c.value, c.key = 0 FROM places, json_each(places.categories) AS c WHERE places.id > ?`,
    );
    const newNames = h.prepare(`INSERT INTO places_fts (rowid, names) SELECT id, ${ftsNames} FROM places WHERE id > ?`);
    const newPoints = h.prepare(
      'INSERT INTO places_geo (id, min_lat, max_lat, min_lon, max_lon) SELECT id, lat, lat, lon, lon FROM places WHERE id > ? AND lat IS NOT NULL AND lon IS NOT NULL',
    );
    // Rows that existed before this batch and changed: ids as a JSON array.
    const oldNames = h.prepare('DELETE FROM places_fts WHERE rowid IN (SELECT value FROM json_each(?))');
    const changedNames = h.prepare(`INSERT INTO places_fts (rowid, names) SELECT id, ${ftsNames} FROM places WHERE id IN (SELECT value FROM json_each(?))`);
    const oldPoints = h.prepare('DELETE FROM places_geo WHERE id IN (SELECT value FROM json_each(?))');
    const changedPoints = h.prepare(
      'INSERT INTO places_geo (id, min_lat, max_lat, min_lon, max_lon) SELECT id, lat, lat, lon, lon FROM places WHERE id IN (SELECT value FROM json_each(?)) AND lat IS NOT NULL AND lon IS NOT NULL',
    );
    const bumpVersion = h.prepare('UPDATE places_version SET version = version + ? WHERE id = 1');

    const values: unknown[] = new Array(placeColumns.length);
    const rowValues = (r: PlaceRecord): unknown[] => {
      for (let i = 0; i < placeColumns.length; i++) {
        const c = placeColumns[i]!;
        values[i] = c === 'categories' ? JSON.stringify(r.categories) : r[c];
      }
      return values;
    };

    this.write = h.transaction((records: PlaceRecord[], runId: number, counters: RunCounters) => {
      const result: BatchResult = { imported: 0, updated: 0, unchanged: 0 };
      const now = new Date().toISOString();
      const before = lastId.get()!;
      const changedIds: number[] = [];
      defer.run();
      for (const r of records) {
        const found = existing.get(r.source, r.source_id);
        if (!found) {
          insert.run(...rowValues(r), runId, now, now);
          result.imported++;
        } else if (found.content_hash !== r.content_hash) {
          update.run(...rowValues(r), runId, now, found.id);
          // A row this batch inserted (the same place twice in a file) gets its categories and indexes below.
          if (found.id <= before) {
            deleteCategories.run(found.id);
            r.categories.forEach((slug, i) => insertCategory.run(found.id, slug, i === 0 ? 1 : 0));
            changedIds.push(found.id);
          }
          result.updated++;
        } else {
          result.unchanged++;
        }
      }
      undefer.run();
      if (result.imported > 0) {
        newCategories.run(before);
        newNames.run(before);
        newPoints.run(before);
      }
      if (changedIds.length > 0) {
        const ids = JSON.stringify(changedIds);
        oldNames.run(ids);
        changedNames.run(ids);
        oldPoints.run(ids);
        changedPoints.run(ids);
      }
      // As the per-row triggers count: one step per inserted or updated row.
      if (result.imported + result.updated > 0) bumpVersion.run(result.imported + result.updated);
      saveCounters.run(
        counters.read_count, counters.imported_count + result.imported, counters.updated_count + result.updated,
        counters.unchanged_count + result.unchanged, counters.skipped_count, JSON.stringify(counters.skipped_reasons), runId,
      );
      return result;
    });
  }

  async writeBatch(records: PlaceRecord[], runId: number, counters: RunCounters): Promise<BatchResult> {
    return this.write(records, runId, counters);
  }
}

/** PostgreSQL (and any other Kysely dialect): one transaction per batch, set-based statements. */
class KyselyPlaceWriter implements PlaceWriter {
  constructor(private readonly db: Db) {}

  async writeBatch(records: PlaceRecord[], runId: number, counters: RunCounters): Promise<BatchResult> {
    const unique = new Map<string, PlaceRecord>();
    for (const r of records) unique.set(`${r.source}\0${r.source_id}`, r);
    const batch = [...unique.values()];
    return this.db.kysely.transaction().execute(async (trx) => {
      const result: BatchResult = { imported: 0, updated: 0, unchanged: 0 };
      const now = new Date().toISOString();
      const bySource = new Map<string, PlaceRecord[]>();
      for (const r of batch) {
        const group = bySource.get(r.source);
        if (group) group.push(r);
        else bySource.set(r.source, [r]);
      }
      const found = new Map<string, { id: number; content_hash: string }>();
      for (const [source, rs] of bySource) {
        const rows = await trx
          .selectFrom('places')
          .select(['id', 'source_id', 'content_hash'])
          .where('source', '=', source)
          .where('source_id', 'in', rs.map((r) => r.source_id))
          .execute();
        for (const row of rows) found.set(`${source}\0${row.source_id}`, row);
      }
      const changed: Array<{ id: number; record: PlaceRecord }> = [];
      const fresh: PlaceRecord[] = [];
      for (const r of batch) {
        const f = found.get(`${r.source}\0${r.source_id}`);
        if (!f) fresh.push(r);
        else if (f.content_hash !== r.content_hash) changed.push({ id: f.id, record: r });
        else result.unchanged++;
      }
      const toRow = (r: PlaceRecord) => ({ ...r, categories: JSON.stringify(r.categories), import_run_id: runId, updated_at: now });
      for (let i = 0; i < fresh.length; i += 500) {
        const slice = fresh.slice(i, i + 500);
        const ids = await trx
          .insertInto('places')
          .values(slice.map((r) => ({ ...toRow(r), first_seen_at: now })))
          .returning(['id', 'source', 'source_id'])
          .execute();
        const byKey = new Map(slice.map((r) => [`${r.source}\0${r.source_id}`, r]));
        const cats = ids.flatMap((row) =>
          (byKey.get(`${row.source}\0${row.source_id}`)?.categories ?? []).map((slug, j) => ({ place_id: row.id, category: slug, is_primary: j === 0 ? 1 : 0 })),
        );
        if (cats.length > 0) await trx.insertInto('place_categories').values(cats).onConflict((oc) => oc.doNothing()).execute();
        result.imported += ids.length;
      }
      for (const { id, record } of changed) {
        await trx.updateTable('places').set(toRow(record)).where('id', '=', id).execute();
        await trx.deleteFrom('place_categories').where('place_id', '=', id).execute();
        const cats = record.categories.map((slug, j) => ({ place_id: id, category: slug, is_primary: j === 0 ? 1 : 0 }));
        if (cats.length > 0) await trx.insertInto('place_categories').values(cats).onConflict((oc) => oc.doNothing()).execute();
        result.updated++;
      }
      await trx
        .updateTable('import_runs')
        .set({
          read_count: counters.read_count,
          imported_count: counters.imported_count + result.imported,
          updated_count: counters.updated_count + result.updated,
          unchanged_count: counters.unchanged_count + result.unchanged,
          skipped_count: counters.skipped_count,
          skipped_reasons: JSON.stringify(counters.skipped_reasons),
        })
        .where('id', '=', runId)
        .execute();
      return result;
    });
  }
}
