import { type Kysely, sql } from 'kysely';
import { dialectOf, doubleType } from './helpers.ts';

/**
 * What an OpenStreetMap change file needs to place the ways it touches (docs/importing-osm.md, "Updates").
 * A change file holds the objects that changed and nothing else: a way whose tags changed comes without
 * its nodes' locations, and a node that moved comes without the ways it belongs to. The `.osm.pbf` import
 * keeps, for the ways that are places and the member ways of the relations that are places (a small part
 * of a country's ways):
 *
 * - `osm_ways`: the way's node ids in order (JSON array) and, when the way is a place, its tags (JSON), so
 *   that a node's move can rewrite the place without the way being in the change file;
 * - `osm_nodes`: the location of every node those ways use (1e-7° precision, as in the file);
 * - `osm_node_ways`: which of those ways use a node, to find the ways a moved node changes (and, by its
 *   second index, the uses of a way, replaced when the way is stored again).
 *
 * Node and way ids are OpenStreetMap's, global across extracts, so the tables are not split by dataset.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const withoutRowid = dialectOf(db) === 'sqlite' ? sql`WITHOUT ROWID` : sql``;
  await db.schema
    .createTable('osm_ways')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('refs', 'text', (c) => c.notNull())
    .addColumn('tags', 'text')
    .execute();
  await db.schema
    .createTable('osm_nodes')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('lat', doubleType(db), (c) => c.notNull())
    .addColumn('lon', doubleType(db), (c) => c.notNull())
    .modifyEnd(withoutRowid)
    .execute();
  await db.schema
    .createTable('osm_node_ways')
    .addColumn('node_id', 'bigint', (c) => c.notNull())
    .addColumn('way_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('osm_node_ways_pk', ['node_id', 'way_id'])
    .modifyEnd(withoutRowid)
    .execute();
  // A way stored again (a re-import, a change file) replaces its uses: found by way.
  await db.schema.createIndex('osm_node_ways_way_idx').on('osm_node_ways').column('way_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('osm_node_ways').execute();
  await db.schema.dropTable('osm_nodes').execute();
  await db.schema.dropTable('osm_ways').execute();
}
