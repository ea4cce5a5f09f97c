import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { byDialect } from '../../infra/db/dialect.ts';
import { type NodePoint, type StoredWay, type WayRows, waysOf } from './osm-geometry.ts';

/**
 * The OpenStreetMap geometry kept for change files (migration 0023): ways that are places or members of
 * relations that are, their nodes' locations, and which ways use a node.
 */
export interface OsmGeometryStore {
  /** Stores each way (its node list and tags replace the stored ones) and its located nodes. */
  saveWays(rows: WayRows): Promise<void>;
  /** The stored ways among `ids`. */
  ways(ids: readonly number[]): Promise<Map<number, StoredWay>>;
  /** The stored locations among `ids`. */
  nodeLocations(ids: readonly number[]): Promise<Map<number, NodePoint>>;
  /** The stored ways that use any of the nodes `ids`. */
  waysUsingNodes(ids: readonly number[]): Promise<number[]>;
  /** New locations of nodes that stored ways use (others are not kept). */
  moveNodes(nodes: ReadonlyArray<{ id: number } & NodePoint>): Promise<void>;
  /** Forgets the ways `ids` (their nodes' locations stay while another way uses them). */
  deleteWays(ids: readonly number[]): Promise<void>;
}

const parseTags = (tags: string | null): Record<string, string> | null =>
  tags === null ? null : (JSON.parse(tags) as Record<string, string>);

/** Ids per statement (SQLite's IN lists; PostgreSQL arrays). */
const CHUNK = 5000;

function chunked<T>(items: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * SQLite: prepared statements on the connection, so a `.osm.pbf` import's geometry joins the place writer's
 * open transaction. PostgreSQL: a statement per table per batch, arrays through `unnest`.
 */
export const osmGeometryStore = byDialect<OsmGeometryStore>({
  sqlite: (db) => {
    const h = db.sqlite;
    const putWay = h.prepare(
      'INSERT INTO osm_ways (id, refs, tags) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET refs = excluded.refs, tags = excluded.tags',
    );
    const dropUses = h.prepare('DELETE FROM osm_node_ways WHERE way_id = ?');
    const putUse = h.prepare('INSERT OR IGNORE INTO osm_node_ways (node_id, way_id) VALUES (?, ?)');
    const putNode = h.prepare(
      'INSERT INTO osm_nodes (id, lat, lon) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET lat = excluded.lat, lon = excluded.lon',
    );
    const moveNode = h.prepare('UPDATE osm_nodes SET lat = ?, lon = ? WHERE id = ?');
    const dropWay = h.prepare('DELETE FROM osm_ways WHERE id = ?');
    const unusedNodes = h.prepare(
      'DELETE FROM osm_nodes WHERE id IN (SELECT value FROM json_each(?)) AND id NOT IN (SELECT node_id FROM osm_node_ways WHERE node_id IN (SELECT value FROM json_each(?)))',
    );
    const usesOf = h.prepare<[number], { node_id: number }>('SELECT node_id FROM osm_node_ways WHERE way_id = ?');
    const save = h.transaction((rows: WayRows) => {
      for (const way of waysOf(rows)) {
        putWay.run(way.id, JSON.stringify(way.refs), way.tags);
        dropUses.run(way.id);
        for (const ref of new Set(way.refs)) putUse.run(ref, way.id);
        for (const p of way.points) putNode.run(p.id, p.lat, p.lon);
      }
    });
    const waysStmt = h.prepare<[string], { id: number; refs: string; tags: string | null }>(
      'SELECT id, refs, tags FROM osm_ways WHERE id IN (SELECT value FROM json_each(?))',
    );
    const nodesStmt = h.prepare<[string], { id: number; lat: number; lon: number }>(
      'SELECT id, lat, lon FROM osm_nodes WHERE id IN (SELECT value FROM json_each(?))',
    );
    const usingStmt = h
      .prepare<[string], number>('SELECT DISTINCT way_id FROM osm_node_ways WHERE node_id IN (SELECT value FROM json_each(?))')
      .pluck();
    return {
      saveWays: async (rows) => {
        if (rows.count > 0) save(rows);
      },
      ways: async (ids) => {
        const found = new Map<number, StoredWay>();
        for (const part of chunked(ids))
          for (const r of waysStmt.all(JSON.stringify(part)))
            found.set(r.id, { id: r.id, refs: JSON.parse(r.refs) as number[], tags: parseTags(r.tags) });
        return found;
      },
      nodeLocations: async (ids) => {
        const found = new Map<number, NodePoint>();
        for (const part of chunked(ids)) for (const r of nodesStmt.all(JSON.stringify(part))) found.set(r.id, { lat: r.lat, lon: r.lon });
        return found;
      },
      waysUsingNodes: async (ids) => chunked(ids).flatMap((part) => usingStmt.all(JSON.stringify(part))),
      moveNodes: async (nodes) => {
        h.transaction(() => {
          for (const n of nodes) moveNode.run(n.lat, n.lon, n.id);
        })();
      },
      deleteWays: async (ids) => {
        h.transaction(() => {
          for (const id of ids) {
            const nodes = JSON.stringify(usesOf.all(id).map((u) => u.node_id));
            dropUses.run(id);
            dropWay.run(id);
            unusedNodes.run(nodes, nodes);
          }
        })();
      },
    };
  },
  postgres: (db) => ({
    saveWays: async (rows) => {
      if (rows.count === 0) return;
      const ways = [...waysOf(rows)];
      await db.kysely.transaction().execute(async (trx) => {
        for (const part of chunked(ways)) {
          const ids = part.map((w) => w.id);
          await sql`INSERT INTO osm_ways (id, refs, tags)
            SELECT * FROM unnest(${ids}::bigint[], ${part.map((w) => JSON.stringify(w.refs))}::text[], ${part.map((w) => w.tags)}::text[])
            ON CONFLICT (id) DO UPDATE SET refs = excluded.refs, tags = excluded.tags`.execute(trx);
          await sql`DELETE FROM osm_node_ways WHERE way_id = ANY(${ids}::bigint[])`.execute(trx);
          const uses = part.flatMap((w) => [...new Set(w.refs)].map((ref) => [ref, w.id] as const));
          for (const u of chunked(uses, 20_000)) {
            await sql`INSERT INTO osm_node_ways (node_id, way_id)
              SELECT * FROM unnest(${u.map((x) => x[0])}::bigint[], ${u.map((x) => x[1])}::bigint[]) ON CONFLICT DO NOTHING`.execute(trx);
          }
          const points = new Map(part.flatMap((w) => w.points.map((p) => [p.id, p] as const)));
          for (const p of chunked([...points.values()], 20_000)) {
            await sql`INSERT INTO osm_nodes (id, lat, lon)
              SELECT * FROM unnest(${p.map((x) => x.id)}::bigint[], ${p.map((x) => x.lat)}::float8[], ${p.map((x) => x.lon)}::float8[])
              ON CONFLICT (id) DO UPDATE SET lat = excluded.lat, lon = excluded.lon`.execute(trx);
          }
        }
      });
    },
    ways: async (ids) => {
      const found = new Map<number, StoredWay>();
      for (const part of chunked(ids)) {
        const { rows } = await sql<{
          id: number;
          refs: string;
          tags: string | null;
        }>`SELECT id, refs, tags FROM osm_ways WHERE id = ANY(${part}::bigint[])`.execute(db.kysely);
        for (const r of rows) found.set(Number(r.id), { id: Number(r.id), refs: JSON.parse(r.refs) as number[], tags: parseTags(r.tags) });
      }
      return found;
    },
    nodeLocations: async (ids) => {
      const found = new Map<number, NodePoint>();
      for (const part of chunked(ids)) {
        const { rows } = await sql<{
          id: number;
          lat: number;
          lon: number;
        }>`SELECT id, lat, lon FROM osm_nodes WHERE id = ANY(${part}::bigint[])`.execute(db.kysely);
        for (const r of rows) found.set(Number(r.id), { lat: r.lat, lon: r.lon });
      }
      return found;
    },
    waysUsingNodes: async (ids) => {
      const out: number[] = [];
      for (const part of chunked(ids)) {
        const { rows } = await sql<{
          way_id: number;
        }>`SELECT DISTINCT way_id FROM osm_node_ways WHERE node_id = ANY(${part}::bigint[])`.execute(db.kysely);
        out.push(...rows.map((r) => Number(r.way_id)));
      }
      return out;
    },
    moveNodes: async (nodes) => {
      for (const part of chunked(nodes)) {
        await sql`UPDATE osm_nodes SET lat = m.lat, lon = m.lon
          FROM unnest(${part.map((n) => n.id)}::bigint[], ${part.map((n) => n.lat)}::float8[], ${part.map((n) => n.lon)}::float8[]) AS m (id, lat, lon)
          WHERE osm_nodes.id = m.id`.execute(db.kysely);
      }
    },
    deleteWays: async (ids) => {
      await db.kysely.transaction().execute(async (trx) => {
        for (const part of chunked(ids)) {
          const { rows } = await sql<{
            node_id: number;
          }>`DELETE FROM osm_node_ways WHERE way_id = ANY(${part}::bigint[]) RETURNING node_id`.execute(trx);
          await sql`DELETE FROM osm_ways WHERE id = ANY(${part}::bigint[])`.execute(trx);
          const nodes = [...new Set(rows.map((r) => Number(r.node_id)))];
          await sql`DELETE FROM osm_nodes WHERE id = ANY(${nodes}::bigint[])
            AND NOT EXISTS (SELECT 1 FROM osm_node_ways u WHERE u.node_id = osm_nodes.id)`.execute(trx);
        }
      });
    },
  }),
});

/** The store of `db` (one per database handle: the SQLite statements are prepared once). */
const stores = new WeakMap<Db, OsmGeometryStore>();
export function geometryStoreOf(db: Db): OsmGeometryStore {
  let store = stores.get(db);
  if (!store) stores.set(db, (store = osmGeometryStore(db)));
  return store;
}
