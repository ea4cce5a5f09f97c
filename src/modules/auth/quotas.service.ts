import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import type { RateLimiter } from '../../infra/ratelimit/ratelimit.ts';
import * as repo from './quotas.repository.ts';
import type { UsageRecorder } from './usage.service.ts';

/** What an account may use: API requests a UTC day, exported rows a calendar month, exports at once, places queued for enrichment a month. */
export interface Quotas {
  requestsPerDay: number;
  exportRowsPerMonth: number;
  concurrentExports: number;
  enrichPlacesPerMonth: number;
  matchRowsPerMonth: number;
}
export type QuotaName = keyof Quotas;
export const quotaNames: readonly QuotaName[] = [
  'requestsPerDay',
  'exportRowsPerMonth',
  'concurrentExports',
  'enrichPlacesPerMonth',
  'matchRowsPerMonth',
];

export interface AccountQuotas extends Quotas {
  /** Which values were set for this account (the others are the configured defaults). */
  custom: Record<QuotaName, boolean>;
}

/** An account's quotas and what it has used of them, for `/api/v1/user-api/usage` and the dashboard. */
export interface AccountUsage {
  quotas: AccountQuotas;
  requestsToday: number;
  requestsResetAt: string;
  exportRowsThisMonth: number;
  exportRowsResetAt: string;
  runningExports: number;
  matchRowsThisMonth: number;
}

/**
 * The account's export quotas, asked when an export starts and as it writes (implemented by
 * `QuotaService` below): every caller of `startExport` passes one, so no way of starting
 * an export can skip them.
 */
export interface ExportAllowance {
  /** Refuses (`quota_exceeded`, with Retry-After) an account running its maximum of exports at once or with no rows left this month. */
  open(accountId: number): Promise<ExportPermit>;
}

export interface ExportPermit {
  /** Takes up to `wanted` rows from the month's quota and returns how many it may write (0: the quota is spent). */
  reserve(wanted: number): Promise<number>;
  /** `rows` of those reserved were delivered to the client (they stay counted). */
  delivered(rows: number): void;
  /** Gives back rows reserved but never delivered and frees the export's concurrency slot; safe to call again. */
  close(): Promise<void>;
}

/** A concurrency slot lapses this long after the last renewal, should the process holding it die. */
const exportLeaseSeconds = 60;
/** What a refused export is told to wait when all its slots are taken: exports end at unknown times. */
const busyRetrySeconds = 10;

export const monthOf = (d: Date): string => d.toISOString().slice(0, 7);
export const nextUtcDay = (d: Date): Date => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
export const nextUtcMonth = (d: Date): Date => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
export const secondsUntil = (from: Date, to: Date): number => Math.max(1, Math.ceil((to.getTime() - from.getTime()) / 1000));

/**
 * Per-account quotas: the configured defaults, overridden per account by an administrator
 * (`leadatlas account quota`). Reads are cached for `cacheTtlMs`, so a change made here applies at
 * once in this process and within that time in the others.
 *
 * Also the exports' allowance: an export starts only while the account runs fewer than its
 * concurrent exports (a lease in the rate limiter's store, shared through Redis) and has rows left
 * this month; it then takes its rows from the month's counter batch by batch as it writes, and stops
 * at the quota (see `exports.service.ts`).
 */
export class QuotaService implements ExportAllowance {
  private readonly cache = new Map<number, { quotas: AccountQuotas; fetchedAt: number }>();
  private readonly cacheTtlMs: number;
  private readonly now: () => Date;

  constructor(
    private readonly db: Db,
    private readonly limiter: RateLimiter,
    private readonly defaults: Quotas,
    private readonly usage: UsageRecorder | null,
    options: { cacheTtlMs?: number; now?: () => Date } = {},
  ) {
    this.cacheTtlMs = options.cacheTtlMs ?? 30_000;
    this.now = options.now ?? (() => new Date());
  }

  /** The account's quotas when cached, without a query. */
  forAccountNow(accountId: number): AccountQuotas | undefined {
    const hit = this.cache.get(accountId);
    return hit && this.now().getTime() - hit.fetchedAt < this.cacheTtlMs ? hit.quotas : undefined;
  }

  async forAccount(accountId: number): Promise<AccountQuotas> {
    const cached = this.forAccountNow(accountId);
    if (cached) return cached;
    const row = await repo.findAccountQuotas(this.db.kysely, accountId);
    const own = {
      requestsPerDay: row?.requests_per_day ?? null,
      exportRowsPerMonth: row?.export_rows_per_month ?? null,
      concurrentExports: row?.concurrent_exports ?? null,
      enrichPlacesPerMonth: row?.enrich_places_per_month ?? null,
      matchRowsPerMonth: row?.match_rows_per_month ?? null,
    };
    const quotas: AccountQuotas = {
      requestsPerDay: own.requestsPerDay === null ? this.defaults.requestsPerDay : Number(own.requestsPerDay),
      exportRowsPerMonth: own.exportRowsPerMonth === null ? this.defaults.exportRowsPerMonth : Number(own.exportRowsPerMonth),
      concurrentExports: own.concurrentExports === null ? this.defaults.concurrentExports : Number(own.concurrentExports),
      enrichPlacesPerMonth: own.enrichPlacesPerMonth === null ? this.defaults.enrichPlacesPerMonth : Number(own.enrichPlacesPerMonth),
      matchRowsPerMonth: own.matchRowsPerMonth === null ? this.defaults.matchRowsPerMonth : Number(own.matchRowsPerMonth),
      custom: {
        requestsPerDay: own.requestsPerDay !== null,
        exportRowsPerMonth: own.exportRowsPerMonth !== null,
        concurrentExports: own.concurrentExports !== null,
        enrichPlacesPerMonth: own.enrichPlacesPerMonth !== null,
        matchRowsPerMonth: own.matchRowsPerMonth !== null,
      },
    };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(accountId, { quotas, fetchedAt: this.now().getTime() });
    return quotas;
  }

  /** Sets some of the account's quotas; null puts one back to the default. */
  async setQuotas(accountId: number, changes: Partial<Record<QuotaName, number | null>>): Promise<AccountQuotas> {
    const columns = {
      requestsPerDay: 'requests_per_day',
      exportRowsPerMonth: 'export_rows_per_month',
      concurrentExports: 'concurrent_exports',
      enrichPlacesPerMonth: 'enrich_places_per_month',
      matchRowsPerMonth: 'match_rows_per_month',
    } as const;
    const values: Record<string, number | null> = {};
    for (const name of quotaNames) {
      const value = changes[name];
      if (value === undefined) continue;
      if (value !== null && (!Number.isSafeInteger(value) || value < 0)) {
        throw new AppError('validation_failed', `${name}: must be a whole number from 0`, {
          errors: [{ field: name, message: 'must be a whole number from 0', allowed: { minimum: 0 } }],
        });
      }
      values[columns[name]] = value;
    }
    await repo.updateAccountQuotas(this.db.kysely, accountId, values, this.now().toISOString());
    this.cache.delete(accountId);
    return this.forAccount(accountId);
  }

  async usageOf(accountId: number): Promise<AccountUsage> {
    const now = this.now();
    const [quotas, requestsToday, exportRowsThisMonth, runningExports, matchRowsThisMonth] = await Promise.all([
      this.forAccount(accountId),
      this.usage ? this.usage.requestsToday(accountId) : Promise.resolve(0),
      repo.exportRowsInMonth(this.db.kysely, accountId, monthOf(now)),
      this.limiter.held(exportsKey(accountId)),
      repo.matchRowsInMonth(this.db.kysely, accountId, monthOf(now)),
    ]);
    return {
      quotas,
      requestsToday,
      requestsResetAt: nextUtcDay(now).toISOString(),
      exportRowsThisMonth,
      exportRowsResetAt: nextUtcMonth(now).toISOString(),
      runningExports,
      matchRowsThisMonth,
    };
  }

  /** Refuses (`quota_exceeded`, policy `export-rows`) an account with no rows left this month. */
  async assertRowsLeft(accountId: number): Promise<AccountQuotas> {
    const quotas = await this.forAccount(accountId);
    const now = this.now();
    const used = await repo.exportRowsInMonth(this.db.kysely, accountId, monthOf(now));
    if (used >= quotas.exportRowsPerMonth) {
      const wait = secondsUntil(now, nextUtcMonth(now));
      throw new AppError(
        'quota_exceeded',
        `This account has exported its ${quotas.exportRowsPerMonth.toLocaleString('en')} rows of this month; the quota renews on ${nextUtcMonth(now).toISOString().slice(0, 10)}`,
        { 'violated-policies': ['export-rows'], retry_after: wait },
        { 'retry-after': String(wait) },
      );
    }
    return quotas;
  }

  /** Takes up to `wanted` places from what is left of the account's enrichment quota in `month`; returns how many it took. */
  async reserveEnrichPlaces(accountId: number, month: string, wanted: number): Promise<number> {
    const quotas = await this.forAccount(accountId);
    return repo.reserveEnrichPlaces(this.db.kysely, accountId, month, wanted, quotas.enrichPlacesPerMonth);
  }

  /** Gives back places an abandoned enrichment job took from a month's quota. */
  async returnEnrichPlaces(accountId: number, month: string, places: number): Promise<void> {
    await repo.returnEnrichPlaces(this.db.kysely, accountId, month, places);
  }

  /** Refuses (`quota_exceeded`, policy `enrich-places`) an account with no places left to enrich this month. */
  async assertEnrichPlacesLeft(accountId: number): Promise<AccountQuotas> {
    const quotas = await this.forAccount(accountId);
    const now = this.now();
    const used = await repo.enrichPlacesInMonth(this.db.kysely, accountId, monthOf(now));
    if (used >= quotas.enrichPlacesPerMonth) {
      const wait = secondsUntil(now, nextUtcMonth(now));
      throw new AppError(
        'quota_exceeded',
        `This account has queued its ${quotas.enrichPlacesPerMonth.toLocaleString('en')} places for enrichment this month; the quota renews on ${nextUtcMonth(now).toISOString().slice(0, 10)}`,
        { 'violated-policies': ['enrich-places'], retry_after: wait },
        { 'retry-after': String(wait) },
      );
    }
    return quotas;
  }

  /**
   * Takes `rows` from what is left of the account's match quota this month, all or nothing: a list larger
   * than what is left is refused (`quota_exceeded`, policy `match-rows`), saying how many rows are left.
   * Returns the month charged.
   */
  async reserveMatchRows(accountId: number, rows: number): Promise<string> {
    const quotas = await this.forAccount(accountId);
    const now = this.now();
    const month = monthOf(now);
    const left = await repo.reserveMatchRows(this.db.kysely, accountId, month, rows, quotas.matchRowsPerMonth);
    if (left !== 'reserved') {
      const wait = secondsUntil(now, nextUtcMonth(now));
      throw new AppError(
        'quota_exceeded',
        `This list has ${rows.toLocaleString('en')} rows and this account has ${left.toLocaleString('en')} of its ${quotas.matchRowsPerMonth.toLocaleString('en')} match rows left this month; the quota renews on ${nextUtcMonth(now).toISOString().slice(0, 10)}`,
        { 'violated-policies': ['match-rows'], retry_after: wait },
        { 'retry-after': String(wait) },
      );
    }
    return month;
  }

  /** Gives back match rows a job took and did not use (bad rows, a job that failed). */
  async returnMatchRows(accountId: number, month: string, rows: number): Promise<void> {
    await repo.returnMatchRows(this.db.kysely, accountId, month, rows);
  }

  /** Gives back rows an export took from a month's quota and never delivered (an export job's abandoned attempt). */
  async returnRows(accountId: number, month: string, rows: number): Promise<void> {
    await repo.returnExportRows(this.db.kysely, accountId, month, rows);
  }

  async open(accountId: number): Promise<ExportPermit> {
    const quotas = await this.assertRowsLeft(accountId);
    const lease = await this.limiter.acquire(exportsKey(accountId), quotas.concurrentExports, exportLeaseSeconds);
    if (!lease) {
      throw new AppError(
        'quota_exceeded',
        `This account already runs ${quotas.concurrentExports} export${quotas.concurrentExports === 1 ? '' : 's'} at once; start this one when one has finished`,
        { 'violated-policies': ['concurrent-exports'], retry_after: busyRetrySeconds },
        { 'retry-after': String(busyRetrySeconds) },
      );
    }
    // Rows reserved and not yet delivered, by month (an export may run across the first of a month):
    // reserved for batches ahead of what the client has taken, given back if they never reach it.
    const outstanding = new Map<string, number>();
    let closed = false;
    return {
      reserve: async (wanted) => {
        const month = monthOf(this.now());
        const granted = await repo.reserveExportRows(this.db.kysely, accountId, month, wanted, quotas.exportRowsPerMonth);
        outstanding.set(month, (outstanding.get(month) ?? 0) + granted);
        return granted;
      },
      delivered: (rows) => {
        // The oldest reservations were delivered first: batches are delivered in order.
        let left = rows;
        for (const [month, reserved] of outstanding) {
          const take = Math.min(left, reserved);
          if (take === reserved) outstanding.delete(month);
          else outstanding.set(month, reserved - take);
          left -= take;
          if (left === 0) break;
        }
      },
      close: async () => {
        if (closed) return;
        closed = true;
        const unwritten = [...outstanding];
        outstanding.clear();
        try {
          for (const [month, rows] of unwritten) await repo.returnExportRows(this.db.kysely, accountId, month, rows);
        } finally {
          await lease.release();
        }
      },
    };
  }
}

const exportsKey = (accountId: number) => `exports:${accountId}`;
