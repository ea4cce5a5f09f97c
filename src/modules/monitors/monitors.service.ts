import { randomBytes } from 'node:crypto';
import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { accountExclusion } from '../leads/exclusion.ts';
import { defaultWindowDays, type OpenAt } from '../places/opening-hours.reads.ts';
import { hoursNotReady, hoursReadiness } from '../places/opening-hours.recent.ts';
import { placesVersion } from '../places/place-changes.repository.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import { findPlacesByIds } from '../search/query/place-query.repository.ts';
import { getSearchForAccount } from '../search/saved-searches.ts';
import { queueDelivery } from '../webhooks/webhooks.service.ts';
import type { EvaluatorHooks, MonitorCriteria } from './monitors.evaluator.ts';
import * as repo from './monitors.repository.ts';
import { type CreateMonitor, type MonitorView, monitorEventKinds } from './monitors.schema.ts';

export interface MonitorLimits {
  perAccount: number;
  maxPlaces: number;
}

export function monitorView(row: repo.MonitorRow): MonitorView {
  return {
    id: row.public_id,
    search_id: row.search_id,
    events: row.events.split(',') as MonitorView['events'],
    webhook_url: row.webhook_url,
    status: row.status,
    places: Number(row.place_count),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * A monitor on one of the account's saved searches: the search's criteria are frozen in the monitor, its
 * current places (at most `maxPlaces`, the account's exclusion applied) become the members, and from the
 * current places version on every change that touches them is an event (`monitors.evaluator.ts`).
 */
export async function createMonitor(db: Db, limits: MonitorLimits, accountId: number, input: CreateMonitor): Promise<repo.MonitorRow> {
  const search = await getSearchForAccount(db, accountId, input.search_id);
  const { criteria } = search;
  // Both need a check after the SQL (point in polygon, edit distance): the SQL alone would make events for places the search does not hold.
  if (criteria.polygon || criteria.text?.mode === 'fuzzy')
    throw new AppError(
      'validation_failed',
      'a monitor watches a search decided by its SQL alone: a drawn area or a typo-tolerant text cannot be watched',
      {
        errors: [
          {
            field: 'search_id',
            message: 'a search with a drawn polygon or typo-tolerant text',
            allowed: ['type', 'city', 'country', 'query (exact words)', 'near', 'bbox', 'filters'],
          },
        ],
      },
    );
  if ((await repo.countAccountMonitors(db, accountId)) >= limits.perAccount)
    throw new AppError(
      'conflict',
      `the account has ${limits.perAccount} monitors, as many as it may (MONITORS_PER_ACCOUNT): delete one first`,
      {
        errors: [{ field: 'search_id', message: `at most ${limits.perAccount} monitors per account` }],
      },
    );
  const onlyNew = search.params.only_new === true;
  const saved: MonitorCriteria = { criteria, onlyNew };
  // Read before the members: a change committed between the two is evaluated again, and comes out as no event if already seen.
  const version = await placesVersion(db);
  const exclude = await accountExclusion(db, accountId, { onlyNew });
  const open = criteria.open ? await trueOpen(db, criteria.open) : null;
  const members = await repo.matchingPlaces(
    db,
    { ...criteria, ...(open ? { open } : {}), ...(exclude ? { exclude } : {}) },
    { limit: limits.maxPlaces + 1 },
  );
  if (members.length > limits.maxPlaces)
    throw new AppError(
      'validation_failed',
      `the search holds more than ${limits.maxPlaces} places (MONITOR_MAX_PLACES): narrow it to watch it`,
      {
        errors: [{ field: 'search_id', message: `more than ${limits.maxPlaces} places` }],
      },
    );
  const at = new Date().toISOString();
  return repo.insertMonitor(
    db,
    {
      public_id: `mon_${randomBytes(10).toString('base64url')}`,
      account_id: accountId,
      search_id: search.id,
      criteria: JSON.stringify(saved),
      events: (input.events ?? monitorEventKinds).join(','),
      webhook_url: input.webhook_url ?? null,
      status: 'active',
      version,
      created_at: at,
      updated_at: at,
    },
    members,
  );
}

/**
 * The open filter of a search as the members are read with it: the places changed since the opening-hours pass
 * decided directly (`hoursReadiness`). 503 `not_ready` while the tables cannot answer its moment: members read
 * from them would be none.
 */
async function trueOpen(db: Db, open: OpenAt): Promise<OpenAt> {
  const readiness = await hoursReadiness(db, open, { nowMs: Date.now(), windowDays: defaultWindowDays });
  if (!readiness.ready) throw hoursNotReady(readiness, notReadyRetryS);
  return readiness.open;
}

/** `Retry-After` of a monitor made before the opening hours are ready: about a server's background check. */
const notReadyRetryS = 5;

export async function getMonitor(db: Db, accountId: number, monitorId: string): Promise<repo.MonitorRow> {
  const row = await repo.findAccountMonitor(db, accountId, monitorId);
  if (!row) throw new AppError('not_found', `monitor ${monitorId} does not exist`);
  return row;
}

const readIdCursor = (field: string) => (cursor: string) =>
  decodeCursor(cursor, (v) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined), {
    field,
    message: 'not a cursor of this list',
  });

export async function listMonitors(
  db: Db,
  accountId: number,
  query: { per_page?: number; cursor?: string },
): Promise<{ data: MonitorView[]; next_cursor: string | null }> {
  const perPage = query.per_page ?? 20;
  const after = query.cursor === undefined ? null : readIdCursor('cursor')(query.cursor);
  const rows = await repo.listAccountMonitors(db, accountId, after, perPage + 1);
  const page = rows.slice(0, perPage);
  return { data: page.map(monitorView), next_cursor: rows.length > perPage ? encodeCursor(Number(page.at(-1)!.id)) : null };
}

/** The account's monitors, newest first, as rows for the dashboard's view. */
export function listAccountMonitorRows(db: Db, accountId: number, limit: number): Promise<repo.MonitorRow[]> {
  return repo.listAccountMonitors(db, accountId, null, limit);
}

export async function setMonitorPaused(db: Db, accountId: number, monitorId: string, paused: boolean): Promise<repo.MonitorRow> {
  const row = await getMonitor(db, accountId, monitorId);
  await repo.setMonitorStatus(db, Number(row.id), paused ? 'paused' : 'active', new Date().toISOString());
  return getMonitor(db, accountId, monitorId);
}

export async function deleteMonitor(db: Db, accountId: number, monitorId: string): Promise<void> {
  const row = await getMonitor(db, accountId, monitorId);
  await repo.deleteMonitor(db, Number(row.id));
}

/**
 * A monitor's events after `cursor`, oldest first, each with the place as it is now. The cursor of the last
 * page is handed back even when it is empty: reading it again later gives exactly the events found since.
 */
export async function monitorEventsPage(db: Db, accountId: number, monitorId: string, query: { per_page?: number; cursor?: string }) {
  const monitor = await getMonitor(db, accountId, monitorId);
  const after = query.cursor === undefined ? 0 : readIdCursor('cursor')(query.cursor);
  const events = await repo.monitorEvents(db, Number(monitor.id), after, query.per_page ?? 100);
  const places = new Map(
    (await findPlacesByIds(db, [...new Set(events.map((e) => Number(e.place_id)))], null)).map((p) => [Number(p.id), p]),
  );
  return {
    data: events.flatMap((e) => {
      const place = places.get(Number(e.place_id));
      return place
        ? [
            {
              id: Number(e.id),
              kind: e.kind,
              changed_fields: JSON.parse(e.changed_fields) as string[],
              at: e.created_at,
              place: placeRowToPlace(place),
            },
          ]
        : [];
    }),
    next_cursor: encodeCursor(events.length > 0 ? Number(events.at(-1)!.id) : after),
  };
}

/** The latest events of the account's monitors for the dashboard: per monitor public id, newest first. */
export async function latestMonitorEvents(db: Db, monitors: repo.MonitorRow[], perMonitor: number) {
  const events = await repo.latestEvents(
    db,
    monitors.map((m) => Number(m.id)),
    perMonitor,
  );
  const places = new Map(
    (await findPlacesByIds(db, [...new Set(events.map((e) => Number(e.place_id)))], null)).map((p) => [Number(p.id), p]),
  );
  const byMonitor = new Map<number, Array<{ kind: string; at: string; name: string; placeId: string }>>();
  for (const e of events) {
    const place = places.get(Number(e.place_id));
    if (!place) continue;
    const list = byMonitor.get(Number(e.monitor_id)) ?? [];
    list.push({ kind: e.kind, at: e.created_at, name: place.name, placeId: place.public_id });
    byMonitor.set(Number(e.monitor_id), list);
  }
  return byMonitor;
}

/**
 * The evaluator's hooks of a server: a monitor with a `webhook_url` has its new events told there (`monitor.events`,
 * the monitor's id and the new event ids, signed and retried as every webhook), queued in the transaction that
 * stores the events.
 */
export const monitorWebhooks: EvaluatorHooks = {
  onEvents: async (trx, monitor, eventIds) => {
    if (!monitor.webhook_url || monitor.status !== 'active') return;
    await queueDelivery(trx, {
      accountId: Number(monitor.account_id),
      jobKind: 'monitor',
      jobId: Number(monitor.id),
      url: monitor.webhook_url,
      outcome: 'events',
      data: { monitor: monitor.public_id, events: eventIds },
      at: new Date(),
    });
  },
};
