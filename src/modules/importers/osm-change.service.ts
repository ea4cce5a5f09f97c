import { stat } from 'node:fs/promises';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { checkDatasetName } from './dataset.ts';
import { enrichedChunks } from './enriched-chunks.ts';
import { loadEnricher } from './enricher.ts';
import { sha256File } from './file-digest.ts';
import { datasetsOfSource } from './import-runs.repository.ts';
import { type RunInfo, type StoredRun, storeChunks } from './import-store.ts';
import type { ReadResult, SourceReader } from './importer.types.ts';
import { geometryStoreOf } from './osm-geometry.repository.ts';
import { appendWay, emptyWayRows, type NodePoint, type WayRows, wayPoint } from './osm-geometry.ts';
import { type ChangedRelation, type OsmChange, readOsmChange } from './readers/osm-change.ts';
import { isPoi, osmObjectToPlace, placeName } from './readers/osm-tags.ts';

export const osmChangeFormat = 'osm-change';

/** Places a transaction: a change file's places are few, and each batch is one transaction. */
const BATCH = 5000;

export interface ChangeImportOptions {
  /** The dataset the changes apply to; by default the one OpenStreetMap dataset of the catalog. */
  dataset?: string;
  /** Source name of the places (default `osm`). */
  source?: string;
  /** What the run records as its file (default the path): a followed feed records the change file's URL. */
  runPath?: string;
  /** Written in the transaction that completes the run (`RunInfo.onFinish`). */
  onFinish?: RunInfo['onFinish'];
}

/** What applying a change file did, in the terms of an import run. */
export interface ChangeSummary {
  run: StoredRun;
  dataset: string;
  source: string;
  /** Ways that were not in the file but moved with their nodes, rewritten from the stored geometry. */
  movedWays: number;
}

/** Whether OpenStreetMap tags make an object a place (as the `.osm.pbf` reader decides). */
const becomesPlace = (tags: Record<string, string>): boolean => isPoi(tags) && placeName(tags) !== undefined;

/**
 * Applies an OpenStreetMap change file (`.osc`, `.osc.gz`) to a dataset imported from OpenStreetMap: the
 * places it creates or modifies are written as an import writes them (enriched, upserted by source id,
 * unchanged ones left alone), and the objects it deletes, or whose tags no longer make a place, are
 * retired (`finishRun` with `changes`). Nothing else of the dataset is retired: a change file is not a
 * snapshot. Applying the same file twice changes nothing the second time.
 *
 * Ways and relations are placed from the geometry the `.osm.pbf` import keeps (migration 0023): a way's
 * nodes come from the file when it holds them, else from the catalog; a node that moved moves every place
 * way that uses it, though the way itself is not in the file. Limits (docs/importing-osm.md, "Updates"):
 * a relation is placed again only when it is in the file itself; a way or relation none of whose nodes is
 * known (a catalog imported from NDJSON, which has no node lists) keeps its place's point, and is counted
 * as skipped (`no location`) when it is new.
 */
export async function applyOsmChange(db: Db, path: string, options: ChangeImportOptions = {}): Promise<ChangeSummary> {
  const source = options.source ?? 'osm';
  const dataset = await datasetToUpdate(db, source, options.dataset);
  const started = new Date().toISOString();
  const { size } = await stat(path);
  const digest = sha256File(path);
  digest.catch(() => {});
  const change = await readOsmChange(path);
  const geometry = geometryStoreOf(db);

  // Nodes the file moved that stored ways use: stored first, so the ways below are placed where they are now.
  const located = [...change.nodes].filter(([, n]) => n.action !== 'delete' && n.lat !== undefined);
  const stored = await geometry.nodeLocations(located.map(([id]) => id));
  const moved = located.filter(([id]) => stored.has(id)).map(([id, n]) => ({ id, lat: n.lat!, lon: n.lon! }));
  await geometry.moveNodes(moved);

  const plan = await planChanges(
    db,
    change,
    moved.map((m) => m.id),
  );
  const reader = new PlannedReader(source, size, plan.results, plan.ways);
  const run = await storeChunks(
    db,
    {
      dataset,
      source,
      format: osmChangeFormat,
      path: options.runPath ?? path,
      fileSha256: digest,
      startedAt: started,
      changes: { retire: plan.retire },
      ...(options.onFinish ? { onFinish: options.onFinish } : {}),
    },
    enrichedChunks(reader, loadEnricher(), BATCH),
    { batchSize: BATCH },
  );
  if (plan.deletedWays.length > 0) await geometry.deleteWays(plan.deletedWays);
  return { run, dataset, source, movedWays: plan.movedWays };
}

/**
 * The dataset a change file applies to: the one named, which must be an imported dataset of the source
 * (a change to a dataset that does not exist would start one that no snapshot ever retires); when none
 * is named, the only one the source has.
 */
export async function datasetToUpdate(db: Db, source: string, named: string | undefined): Promise<string> {
  const datasets = await datasetsOfSource(db, source);
  if (named !== undefined) {
    const name = checkDatasetName(named);
    if (datasets.includes(name)) return name;
    throw new AppError('unknown_value', `no ${source} dataset named ${name} has been imported: a change file updates an imported extract`, {
      errors: [{ field: 'dataset', message: 'not an imported dataset', allowed: datasets }],
    });
  }
  if (datasets.length === 1) return datasets[0]!;
  throw new AppError(
    'validation_failed',
    datasets.length === 0
      ? `a change file updates an imported OpenStreetMap extract, and the catalog has none of source ${source}: import the extract (.osm.pbf) first`
      : `the catalog has several ${source} datasets: say which one the change file updates with --dataset`,
    {
      errors: [
        {
          field: 'dataset',
          message: datasets.length === 0 ? 'no dataset to update' : 'required',
          ...(datasets.length > 0 ? { allowed: datasets } : {}),
        },
      ],
    },
  );
}

interface Plan {
  results: ReadResult[];
  /** Ways to store (changed ways that are places, or were stored already as a relation's members). */
  ways: WayRows;
  retire: string[];
  deletedWays: number[];
  movedWays: number;
}

/** What the change file does to the catalog: places to write, source ids to retire, ways to store. */
async function planChanges(db: Db, change: OsmChange, movedNodes: number[]): Promise<Plan> {
  const geometry = geometryStoreOf(db);
  const results: ReadResult[] = [];
  const retire: string[] = [];
  const ways = emptyWayRows();
  const deletedWays: number[] = [];

  const add = (sourceId: string, tags: Record<string, string>, point: { lat: number | null; lon: number | null }) => {
    results.push(osmObjectToPlace(sourceId, tags, point.lat, point.lon));
  };

  for (const [id, node] of change.nodes) {
    if (node.action !== 'delete' && becomesPlace(node.tags)) add(`n${id}`, node.tags, { lat: node.lat!, lon: node.lon! });
    else if (node.action !== 'create') retire.push(`n${id}`);
  }

  // Ways the file holds, the stored ones that moved with their nodes, and the member ways of the file's relations.
  const memberWays = new Set<number>();
  for (const [, rel] of change.relations)
    for (const m of rel.members) if (m.type === 'way' && !change.ways.has(m.ref)) memberWays.add(m.ref);
  const movedWayIds = (await geometry.waysUsingNodes(movedNodes)).filter((id) => !change.ways.has(id));
  const storedWays = await geometry.ways([...new Set([...change.ways.keys(), ...movedWayIds, ...memberWays])]);
  const nodeIds = new Set<number>();
  for (const [, way] of change.ways) for (const ref of way.refs) if (!change.nodes.has(ref)) nodeIds.add(ref);
  for (const way of storedWays.values()) for (const ref of way.refs) if (!change.nodes.has(ref)) nodeIds.add(ref);
  const storedNodes = await geometry.nodeLocations([...nodeIds]);
  const locate = (ref: number): NodePoint | undefined => {
    const n = change.nodes.get(ref);
    if (n && n.action !== 'delete' && n.lat !== undefined) return { lat: n.lat, lon: n.lon! };
    return storedNodes.get(ref);
  };

  const relationMembers = new Set<number>();
  for (const [, rel] of change.relations)
    if (rel.action !== 'delete') for (const m of rel.members) if (m.type === 'way') relationMembers.add(m.ref);
  for (const [id, way] of change.ways) {
    if (way.action === 'delete') {
      retire.push(`w${id}`);
      deletedWays.push(id);
      continue;
    }
    const place = becomesPlace(way.tags);
    if (place) add(`w${id}`, way.tags, wayPoint(way.refs, locate));
    else if (way.action !== 'create') retire.push(`w${id}`);
    if (place || storedWays.has(id) || relationMembers.has(id))
      appendWay(ways, id, place ? JSON.stringify(way.tags) : null, way.refs, way.refs.length, locate);
  }
  let movedWays = 0;
  for (const id of movedWayIds) {
    const way = storedWays.get(id);
    if (!way?.tags) continue;
    movedWays++;
    add(`w${id}`, way.tags, wayPoint(way.refs, locate));
  }

  const refsOf = (wayId: number): number[] | undefined => change.ways.get(wayId)?.refs ?? storedWays.get(wayId)?.refs;
  for (const [id, rel] of change.relations) {
    const { type: _structure, ...tags } = rel.tags;
    if (rel.action !== 'delete' && becomesPlace(tags)) add(`r${id}`, tags, relationPoint(rel.members, refsOf, locate));
    else if (rel.action !== 'create') retire.push(`r${id}`);
  }
  return { results, ways, retire, deletedWays, movedWays };
}

/**
 * As the `.osm.pbf` reader places a relation: the vertex average of its outer ways (of all member ways when
 * none is outer), else of its member nodes.
 */
function relationPoint(
  members: ChangedRelation['members'],
  refsOf: (wayId: number) => number[] | undefined,
  locate: (id: number) => NodePoint | undefined,
): { lat: number | null; lon: number | null } {
  const memberWays = members.filter((m) => m.type === 'way');
  const outer = memberWays.filter((m) => m.role === 'outer');
  const vertices = (outer.length > 0 ? outer : memberWays).flatMap((m) => refsOf(m.ref) ?? []);
  const point = wayPoint(vertices, locate);
  if (point.lat !== null) return point;
  return wayPoint(
    members.filter((m) => m.type === 'node').map((m) => m.ref),
    locate,
  );
}

/** The planned places as a reader, so that they are enriched and written as any import's are. */
class PlannedReader implements SourceReader {
  readonly format = osmChangeFormat;
  readonly publisher = 'osm';
  private read = 0;
  private ways: WayRows | undefined;

  constructor(
    readonly source: string,
    readonly totalBytes: number,
    private readonly results: ReadResult[],
    ways: WayRows,
  ) {
    this.ways = ways.count > 0 ? ways : undefined;
  }

  bytesRead(): number {
    return this.results.length === 0 ? this.totalBytes : Math.floor((this.totalBytes * this.read) / this.results.length);
  }

  async *records(): AsyncIterable<ReadResult> {
    for (const result of this.results) {
      this.read++;
      yield result;
    }
  }

  takeWays(): WayRows | undefined {
    const taken = this.ways;
    this.ways = undefined;
    return taken;
  }
}
