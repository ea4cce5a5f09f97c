import type { Transaction } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import type { Database } from '../../infra/db/schema.ts';
import { PollLoop } from '../../infra/poll-loop.ts';
import { accountExclusion } from '../leads/exclusion.ts';
import { defaultWindowDays, type OpenAt } from '../places/opening-hours.reads.ts';
import { hoursReadiness } from '../places/opening-hours.recent.ts';
import { placeChangesSince, placesVersion } from '../places/place-changes.repository.ts';
import type { PlaceCriteria } from '../search/query/criteria.ts';
import {
  type ChangedPlace,
  changedPlaces,
  type Evaluation,
  type MonitorRow,
  matchingPlaces,
  membersAmong,
  monitorMembers,
  monitorsNotAt,
  type PlaceState,
  saveEvaluations,
  statusFields,
} from './monitors.repository.ts';

/** What a monitor stores of its saved search: the criteria as saved, and whether it asked for new places only. */
export interface MonitorCriteria {
  criteria: PlaceCriteria;
  onlyNew: boolean;
}

export interface EvaluatorHooks {
  /** Called in the transaction that stores a monitor's events (webhook deliveries are queued there). */
  onEvents?: (trx: Transaction<Database>, monitor: MonitorRow, eventIds: number[]) => Promise<void>;
}

export interface EvaluationRound {
  monitors: number;
  events: number;
  changedPlaces: number;
  /**
   * Monitors of open searches left at their version because the opening hours cannot answer their moment yet
   * (no pass, or too many places changed since it: `hoursReadiness`); a later round evaluates them.
   */
  waiting: number;
}

/** Change-log rows read at once; a version is never split (`placeChangesSince`). */
const CHANGES_PAGE = 50_000;
/** Monitors written per transaction: a round's write lock is held in short steps. */
const MONITORS_PER_TRANSACTION = 200;

/**
 * Brings every monitor up to the current places version from what changed (`place_changes`, migration 0028),
 * not by running each search again: the changed places are narrowed per monitor by the criteria that are plain
 * equalities (category, city, country) and by the monitor's own members, and only that handful is checked
 * with the search's own SQL (`filtered`, the account's exclusion included). A place that now matches and was
 * not a member is `added`; a member that no longer matches (closed, retired, moved out, suppressed) is
 * `closed`; a member whose content hash changed is `changed`, with the watched fields that differ. A monitor's
 * events, members and new version commit together, and only when the monitor is still at the version it was
 * read at: after a crash, or with several servers, a change is evaluated once. When the change log no longer
 * reaches back to a monitor's version (pruned), or the version is ahead of the catalog's (a copied database), its
 * search is run whole and compared with its members.
 */
export async function evaluateMonitors(db: Db, hooks: EvaluatorHooks = {}): Promise<EvaluationRound> {
  const current = await placesVersion(db);
  const behind = await monitorsNotAt(db, current);
  const round: EvaluationRound = { monitors: 0, events: 0, changedPlaces: 0, waiting: 0 };
  // An open search is evaluated with the places changed since the opening-hours pass decided directly, or not at
  // all this round: read from tables that do not hold its moment or its places, every member would leave.
  const readyOpen = new Map<string, Promise<OpenAt | null>>();
  const trueOpen = (open: OpenAt): Promise<OpenAt | null> => {
    const key = JSON.stringify(open);
    let ready = readyOpen.get(key);
    if (!ready) {
      ready = hoursReadiness(db, open, { nowMs: Date.now(), windowDays: defaultWindowDays }).then((r) => (r.ready ? r.open : null));
      readyOpen.set(key, ready);
    }
    return ready;
  };
  const byVersion = new Map<number, MonitorRow[]>();
  for (const m of behind) {
    const list = byVersion.get(Number(m.version));
    if (list) list.push(m);
    else byVersion.set(Number(m.version), [m]);
  }
  const exclusions = new Map<string, Awaited<ReturnType<typeof accountExclusion>>>();
  const exclusionOf = async (accountId: number, onlyNew: boolean) => {
    const key = `${accountId}:${onlyNew}`;
    if (!exclusions.has(key)) exclusions.set(key, await accountExclusion(db, accountId, { onlyNew }));
    return exclusions.get(key)!;
  };
  for (const [since, monitors] of byVersion) {
    const ids = new Set<number>();
    let through = since;
    // A version ahead of the catalog's comes from another database (`db copy`): its changes are not in this log.
    let complete = since <= current;
    for (let more = complete; more && complete; ) {
      const page = await placeChangesSince(db, through, CHANGES_PAGE);
      complete = page.complete;
      more = page.more;
      through = page.through;
      for (const id of page.placeIds) ids.add(id);
    }
    if (!complete) through = current;
    const changed = complete ? await changedPlaces(db, [...ids]) : [];
    round.changedPlaces += ids.size;
    const index = indexChanged(changed);
    const members = complete ? await membersAmong(db, [...ids]) : new Map<number, number[]>();
    const memberOf = new Map<number, number[]>();
    for (const [placeId, monitorIds] of members)
      for (const id of monitorIds) {
        const list = memberOf.get(id);
        if (list) list.push(placeId);
        else memberOf.set(id, [placeId]);
      }
    const evaluations: Array<{ monitor: MonitorRow; evaluation: Evaluation }> = [];
    for (const monitor of monitors) {
      // SQLite answers in the same turn of the event loop: without a turn given back between monitors, a
      // round would hold the server's loop (and the read pool's answers to searches) for its whole length.
      await new Promise((resolve) => setImmediate(resolve));
      const saved = JSON.parse(monitor.criteria) as MonitorCriteria;
      const open = saved.criteria.open ? await trueOpen(saved.criteria.open) : null;
      if (saved.criteria.open && !open) {
        round.waiting++;
        continue;
      }
      const exclude = await exclusionOf(Number(monitor.account_id), saved.onlyNew);
      const criteria: PlaceCriteria = { ...saved.criteria, ...(open ? { open } : {}), ...(exclude ? { exclude } : {}) };
      const evaluation = complete
        ? await evaluateChanges(db, monitor, criteria, candidatesOf(saved.criteria, index), memberOf.get(Number(monitor.id)) ?? [], through)
        : await evaluateWhole(db, monitor, criteria, through);
      evaluations.push({ monitor, evaluation });
    }
    for (let i = 0; i < evaluations.length; i += MONITORS_PER_TRANSACTION) {
      await new Promise((resolve) => setImmediate(resolve));
      const part = evaluations.slice(i, i + MONITORS_PER_TRANSACTION);
      const byId = new Map(part.map((p) => [p.monitor.id, p.monitor]));
      const stored = await saveEvaluations(
        db,
        part.map((p) => p.evaluation),
        new Date().toISOString(),
        hooks.onEvents ? (trx, monitorId, eventIds) => hooks.onEvents!(trx, byId.get(monitorId)!, eventIds) : undefined,
      );
      round.monitors += part.length;
      for (const ids of stored.values()) round.events += ids.length;
    }
  }
  return round;
}

interface ChangedIndex {
  all: number[];
  byCategory: Map<string, number[]>;
  byCity: Map<number, number[]>;
  byCountry: Map<string, number[]>;
}

function push<K>(map: Map<K, number[]>, key: K, id: number): void {
  const list = map.get(key);
  if (list) list.push(id);
  else map.set(key, [id]);
}

function indexChanged(changed: ChangedPlace[]): ChangedIndex {
  const index: ChangedIndex = { all: [], byCategory: new Map(), byCity: new Map(), byCountry: new Map() };
  for (const p of changed) {
    index.all.push(p.id);
    if (p.category !== null) push(index.byCategory, p.category, p.id);
    if (p.city_id !== null) push(index.byCity, p.city_id, p.id);
    if (p.country_code !== null) push(index.byCountry, p.country_code, p.id);
  }
  return index;
}

/**
 * The changed places that may match now, by the criteria that are plain equalities of the search's SQL (the
 * narrowest list of them): a superset of the matches, which the SQL then decides.
 */
function candidatesOf(criteria: PlaceCriteria, index: ChangedIndex): number[] {
  const lists: number[][] = [];
  if (criteria.cityId !== null) lists.push(index.byCity.get(criteria.cityId) ?? []);
  if (criteria.countryCode !== null) lists.push(index.byCountry.get(criteria.countryCode) ?? []);
  if (criteria.categories) lists.push(criteria.categories.flatMap((c) => index.byCategory.get(c) ?? []));
  if (lists.length === 0) return index.all;
  return lists.reduce((a, b) => (b.length < a.length ? b : a));
}

const fieldsOf = (snapshot: string) => JSON.parse(snapshot) as Record<string, unknown>;

/**
 * The watched fields that differ. A field the member's stored snapshot lacks was not watched when it was stored
 * (a field added later): not a change. A verdict (`statusFields`) changes only from one status to another.
 */
function changedFields(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return Object.keys(b).filter((k) => k in a && a[k] !== b[k] && !(statusFields.has(k) && (a[k] === null || b[k] === null)));
}

function diff(before: PlaceState[], now: PlaceState[], monitor: MonitorRow, to: number): Evaluation {
  const old = new Map(before.map((p) => [p.id, p]));
  const current = new Map(now.map((p) => [p.id, p]));
  const evaluation: Evaluation = {
    monitorId: Number(monitor.id),
    from: Number(monitor.version),
    to,
    added: [],
    left: [],
    changed: [],
    record: monitor.status === 'active',
    events: new Set(monitor.events.split(',')),
  };
  for (const p of now) {
    const was = old.get(p.id);
    if (!was) evaluation.added.push(p);
    else if (was.hash !== p.hash || was.snapshot !== p.snapshot) {
      const fields = changedFields(fieldsOf(was.snapshot), fieldsOf(p.snapshot));
      if (was.hash !== p.hash || fields.length > 0) evaluation.changed.push({ ...p, fields });
    }
  }
  for (const p of before) if (!current.has(p.id)) evaluation.left.push(p.id);
  evaluation.added.sort((a, b) => a.id - b.id);
  evaluation.left.sort((a, b) => a - b);
  evaluation.changed.sort((a, b) => a.id - b.id);
  return evaluation;
}

async function evaluateChanges(
  db: Db,
  monitor: MonitorRow,
  criteria: PlaceCriteria,
  candidates: number[],
  memberIds: number[],
  to: number,
): Promise<Evaluation> {
  const ids = [...new Set([...candidates, ...memberIds])];
  const now: PlaceState[] = [];
  for (let i = 0; i < ids.length; i += 5000) now.push(...(await matchingPlaces(db, criteria, { ids: ids.slice(i, i + 5000) })));
  const before = memberIds.length > 0 ? await monitorMembers(db, Number(monitor.id), memberIds) : [];
  return diff(before, now, monitor, to);
}

async function evaluateWhole(db: Db, monitor: MonitorRow, criteria: PlaceCriteria, to: number): Promise<Evaluation> {
  return diff(await monitorMembers(db, Number(monitor.id)), await matchingPlaces(db, criteria, {}), monitor, to);
}

/** Evaluates the monitors every `pollMs` while the server runs (and at once when asked). */
export class MonitorEvaluator {
  private readonly loop: PollLoop;

  constructor(options: { db: Db; pollMs: number; onError: (error: unknown) => void; hooks?: EvaluatorHooks }) {
    this.loop = new PollLoop(
      async () => {
        await evaluateMonitors(options.db, options.hooks);
      },
      options.pollMs,
      options.onError,
    );
  }

  start(): void {
    this.loop.schedule(0);
  }

  close(): Promise<void> {
    return this.loop.close();
  }
}
