import { type Kysely, sql } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * One business, one place (issue #18; `src/modules/conflation/README.md`). Records of different sources
 * that describe one business become one place:
 *
 * - The place is a row of `places` like any other, with `sources` (the JSON list of its records,
 *   `[{source, source_id}]`, the one that leads first), `field_sources` (which source gave each field)
 *   and `merge_state` (what the merge was computed from). Its `source_id` is `merged:` and its public id,
 *   so it never collides with a record and no import or change file ever writes or retires it.
 * - Each record stays a row of its own, written by imports as before, with `merged_into` naming its place
 *   and `closed_reason = 'merged'` (so every read that leaves closed places out leaves it out) while its
 *   source holds it, `retired` once its dataset drops it.
 * - `place_match_due`: the records due for conflation, written by the place writers with the row: a new
 *   record (`changed` 0) or one whose content changed (`changed` 1: its old keys go first). Conflation
 *   deletes the entry when it is done. A table of its own rather than a state column of `places`, so that
 *   marking a record done does not rewrite its row (on PostgreSQL a new row version in every index of
 *   `places`, the trigram indexes included). Every place already in the catalog is due once.
 * - `place_match_keys`: the blocking keys of every record (`blocking.ts`), so an import compares a new
 *   record with the few places that share a key instead of the catalog.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('places').addColumn('merged_into', 'bigint').execute();
  await db.schema.alterTable('places').addColumn('sources', 'text').execute();
  await db.schema.alterTable('places').addColumn('field_sources', 'text').execute();
  await db.schema.alterTable('places').addColumn('merge_state', 'text').execute();
  await sql`CREATE INDEX places_merged_into_idx ON places (merged_into) WHERE merged_into IS NOT NULL`.execute(db);
  await db.schema
    .createTable('place_match_due')
    .addColumn('place_id', 'bigint', (c) => c.primaryKey())
    .addColumn('changed', 'integer', (c) => c.notNull())
    .execute();
  await sql`INSERT INTO place_match_due (place_id, changed) SELECT id, 0 FROM places`.execute(db);
  // A row id of its own: what `db copy` reads, resumes and checks by (a text key sorts by collation on PostgreSQL).
  await db.schema
    .createTable('place_match_keys')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('place_match_keys_key_idx').on('place_match_keys').columns(['key', 'place_id']).unique().execute();
  await db.schema.createIndex('place_match_keys_place_idx').on('place_match_keys').column('place_id').execute();
  // A record that joins a place brings its leads along: found by place (the unique key leads with the account).
  await db.schema.createIndex('leads_place_idx').on('leads').column('place_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS leads_place_idx`.execute(db);
  await db.schema.dropTable('place_match_keys').execute();
  await db.schema.dropTable('place_match_due').execute();
  await sql`DROP INDEX IF EXISTS places_merged_into_idx`.execute(db);
  for (const column of ['merge_state', 'field_sources', 'sources', 'merged_into']) {
    await db.schema.alterTable('places').dropColumn(column).execute();
  }
}
