import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { asDiskFull } from '../../infra/storage.ts';
import { attachmentDisposition } from '../exports/content-disposition.ts';
import type { DownloadLinks } from '../exports/download-links.ts';
import { type Cell, guardFormula } from '../exports/formats/cells.ts';
import { XlsxSheetWriter } from '../exports/formats/xlsx-sheet-writer.ts';
import { type HandedLeads, openHandedLeads } from '../exports/handed-leads.ts';
import { leasedJobQueries } from '../exports/leased-jobs.repository.ts';
import { LeasedJobRunner, removeJobFiles, syncDir } from '../exports/leased-jobs.ts';
import { queueDelivery } from '../webhooks/webhooks.service.ts';
import type { MatchRecordInput } from './match.schema.ts';
import { type ListMatchResult, type MatchDeps, matchListRecords } from './match.service.ts';
import type { ColumnMapping } from './match-headers.ts';
import * as repo from './match-jobs.repository.ts';
import { resultColumns } from './match-jobs.schema.ts';
import { type MatchAllowance, matchJobView, type StoredMapping } from './match-jobs.service.ts';
import { cellOf, type ListFormat, type ListRow, type OpenedList, openList } from './match-lists.ts';

export interface MatchJobRunnerOptions {
  db: Db;
  log: FastifyBaseLogger;
  deps: MatchDeps;
  allowance: MatchAllowance;
  links: DownloadLinks;
  /** Told when a job ended with an event queued. */
  onEvent: () => void;
  dataDir: string;
  /** Free bytes the data directory keeps (DISK_MIN_FREE_MB): a job that finds the disk full says so. */
  minFreeBytes: number;
  perServer: number;
  leaseSeconds: number;
  /** Base of the download URLs in webhook events (PUBLIC_URL), empty for paths. */
  baseUrl: string;
  pollMs?: number;
  /** Records handed to the matcher at once. */
  batchSize?: number;
}

/** What a row came to. */
type Decision = 'matched' | 'unmatched' | 'bad_row';

export interface Counts {
  rows_done: number;
  matched: number;
  closed: number;
  bad_rows: number;
}

/**
 * Runs match jobs on the export jobs' machinery (`LeasedJobRunner`: the queue in the database, leases, a dead
 * process's job run again from scratch, a closing one's put back). A job reads its list from the data directory
 * row by row, hands the matcher a batch at a time, and writes `<job>.<attempt>.tmp`: every row of the list in
 * its order with the result columns appended (a bad row gets its reason, never a failed job). With `as_leads`
 * the matched places of a batch become leads of the account once the file has taken the batch. The file is
 * synced and renamed to `<job>.csv` (`.xlsx` for a workbook, `.ndjson` for an NDJSON list), the upload deleted, the quota rows the bad
 * rows did not use given back, and the job ends `succeeded` with its webhook event, in one transaction.
 */
export class MatchJobRunner {
  private readonly queue: LeasedJobRunner<repo.MatchJobRow>;

  constructor(private readonly o: MatchJobRunnerOptions) {
    this.queue = new LeasedJobRunner<repo.MatchJobRow>(
      {
        name: 'match job',
        queries: leasedJobQueries(o.db, 'match_jobs'),
        load: (jobId) => repo.findMatchJobById(o.db, jobId),
        run: (job, { runner, signal }) => this.run(job, runner, signal),
      },
      { log: o.log, perServer: o.perServer, leaseSeconds: o.leaseSeconds, pollMs: o.pollMs },
    );
  }

  start(): void {
    this.queue.start();
  }

  poke(): void {
    this.queue.poke();
  }

  async close(): Promise<void> {
    await this.queue.close();
  }

  private async run(job: repo.MatchJobRow, runner: string, stop: AbortSignal): Promise<'ended' | 'stopped'> {
    const { db, log, dataDir } = this.o;
    const attempt = job.attempts + 1;
    // A previous attempt's partial file goes; the upload stays.
    await removeJobFiles(dataDir, job.public_id, job.input_file ? [job.input_file] : []);
    if (!job.input_file) {
      await this.end(job, runner, { status: 'failed', failure: 'internal: the uploaded list is no longer on this server' }, emptyCounts());
      return 'ended';
    }
    await mkdir(dataDir, { recursive: true });
    const stored = JSON.parse(job.mapping) as StoredMapping;
    const outFormat = job.input_format as ListFormat;
    const tmp = join(dataDir, `${job.public_id}.${attempt}.tmp`);
    const counts = emptyCounts();
    let leads: HandedLeads | undefined;
    let list: OpenedList | undefined;
    try {
      list = await openList(join(dataDir, job.input_file), job.input_format as ListFormat);
      if (job.as_leads === 1) leads = await openHandedLeads(db, { accountId: job.account_id, sourceId: job.public_id, source: 'match' });
      log.info({ job: job.public_id, attempt, rows: job.row_count }, 'match job started');
      const file = await open(tmp, 'w');
      let bytes: number;
      try {
        ({ bytes } = await writeMatchedList({
          deps: this.o.deps,
          list,
          headers: stored.headers,
          mapping: stored.fields,
          threshold: job.threshold,
          out: file,
          leads,
          stop,
          batchSize: this.o.batchSize,
          counts,
          onBatch: () => repo.updateMatchProgress(db, job.id, runner, counts),
        }));
        await file.sync();
      } finally {
        await file.close();
      }
      if (stop.aborted) throw new Error(String(stop.reason));
      const fileName = `${job.public_id}.${outFormat}`;
      await rename(tmp, join(dataDir, fileName));
      await syncDir(dataDir);
      await leads?.finish('done');
      await rm(join(dataDir, job.input_file), { force: true });
      const base = job.input_name.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'list';
      await this.end(
        job,
        runner,
        {
          status: 'succeeded',
          file_name: fileName,
          file_bytes: bytes,
          download_name: attachmentDisposition(`${base}-leadatlas.${outFormat}`),
        },
        counts,
      );
      return 'ended';
    } catch (error) {
      await list?.rows[Symbol.asyncIterator]().return?.(undefined);
      await rm(tmp, { force: true });
      await leads?.finish('aborted').catch(() => {});
      if (stop.aborted) return 'stopped';
      log.error({ err: error, job: job.public_id }, 'match job failed');
      await rm(join(dataDir, job.input_file), { force: true });
      const diskFull = asDiskFull(error, dataDir, this.o.minFreeBytes, `match job ${job.public_id}`);
      const failure =
        diskFull instanceof AppError
          ? `${diskFull.code}: ${diskFull.message}`
          : 'internal: the list could not be matched; see the server log';
      await this.end(job, runner, { status: 'failed', failure }, counts);
      return 'ended';
    }
  }

  /** Ends the job, gives back the quota rows it did not use, and queues its webhook event, in one transaction. */
  private async end(
    job: repo.MatchJobRow,
    runner: string,
    values: { status: 'succeeded' | 'failed'; failure?: string; file_name?: string; file_bytes?: number; download_name?: string },
    counts: Counts,
  ): Promise<void> {
    const { db } = this.o;
    const at = new Date();
    // A failed job's rows all go back; a finished one keeps the rows it matched (bad rows are not charged).
    const used = values.status === 'succeeded' ? counts.rows_done - counts.bad_rows : 0;
    const ended = {
      status: values.status,
      failure: values.failure ?? null,
      ...counts,
      file_name: values.file_name ?? null,
      file_bytes: values.file_bytes ?? null,
      download_name: values.download_name ?? null,
      finished_at: at.toISOString(),
      input_file: null,
      charged_rows: used,
    };
    const view = job.webhook_url
      ? await matchJobView({ ...job, ...ended, attempts: job.attempts + 1 }, this.o.links, this.o.baseUrl)
      : null;
    let queued = false;
    let ours = false;
    await db.kysely.transaction().execute(async (trx) => {
      ours = await repo.endMatchJob(trx, job.id, runner, ended);
      if (!ours || !job.webhook_url) return;
      await queueDelivery(trx, {
        accountId: job.account_id,
        jobKind: 'match_job',
        jobId: job.id,
        url: job.webhook_url,
        outcome: values.status,
        data: { job: view },
        at,
      });
      queued = true;
    });
    if (ours && job.charged_month && job.charged_rows > used) {
      await this.o.allowance.returnMatchRows(job.account_id, job.charged_month, job.charged_rows - used);
    }
    this.o.log.info({ job: job.public_id, status: values.status, ...counts, failure: ended.failure }, 'match job ended');
    if (queued) this.o.onEvent();
  }
}

export const emptyCounts = (): Counts => ({ rows_done: 0, matched: 0, closed: 0, bad_rows: 0 });

/** Where a result goes (a file handle): text for CSV and NDJSON, the zip's bytes for a workbook. */
export interface ResultSink {
  write(data: string): Promise<unknown>;
  write(data: Uint8Array): Promise<unknown>;
}

/**
 * Matches a list into `out`, batch by batch: each row of the list in its order, its own cells as they were,
 * the result columns appended, in the list's format (CSV in the list's delimiter; a workbook of one sheet for
 * an XLSX list, written as it goes by `XlsxSheetWriter`; NDJSON for an NDJSON list). With `leads`, the
 * matched places of a batch are recorded once `out` has taken the batch. `counts` is updated as rows are
 * written; `onBatch` is called after each batch. Stops between batches once `stop` is aborted.
 */
export async function writeMatchedList(o: {
  deps: MatchDeps;
  list: OpenedList;
  headers: readonly string[];
  mapping: ColumnMapping;
  threshold: number | null;
  out: ResultSink;
  leads?: HandedLeads;
  stop?: AbortSignal;
  batchSize?: number;
  counts: Counts;
  onBatch?: () => Promise<void> | void;
}): Promise<{ bytes: number }> {
  const { list } = o;
  const writer = new ResultWriter(list, o.headers, list.format);
  const workbook = list.format === 'xlsx' ? new XlsxSheetWriter(o.out, [...o.headers, ...resultColumns], 'matched') : undefined;
  let bytes = 0;
  const first = writer.header();
  if (first) {
    await o.out.write(first);
    bytes += Buffer.byteLength(first);
  }
  try {
    for await (const batch of batches(list.rows, o.batchSize ?? 200)) {
      if (o.stop?.aborted) break;
      bytes += await writeBatch(o, batch, writer, workbook);
    }
    if (workbook) bytes = await workbook.end();
  } catch (error) {
    workbook?.destroy();
    throw error;
  }
  return { bytes };
}

/** One batch matched and written; the bytes written (none for a workbook, whose size is known at its end). */
async function writeBatch(
  o: Parameters<typeof writeMatchedList>[0],
  batch: ListRow[],
  writer: ResultWriter,
  workbook: XlsxSheetWriter | undefined,
): Promise<number> {
  const { list, counts } = o;
  const records = batch.filter((r) => !r.problem).map((r) => recordOf(list, r, o.mapping));
  const results = records.length > 0 ? await matchListRecords(o.deps, records, { threshold: o.threshold ?? undefined }) : [];
  let next = 0;
  let text = '';
  const sheetRows: Cell[][] = [];
  const placeIds: number[] = [];
  for (const row of batch) {
    const result = row.problem ? undefined : results[next++];
    const decision: Decision = !result || result.error ? 'bad_row' : result.match ? 'matched' : 'unmatched';
    counts.rows_done++;
    if (decision === 'bad_row') counts.bad_rows++;
    if (result?.match) {
      counts.matched++;
      if (result.match.place.status !== 'open') counts.closed++;
      placeIds.push(result.match.placeRowId);
    }
    if (workbook) sheetRows.push(writer.cells(row, decision, result, o.threshold));
    else text += writer.row(row, decision, result, o.threshold);
  }
  if (workbook) await workbook.rows(sheetRows);
  else await o.out.write(text);
  // The file holds the batch: its places are the account's now.
  if (o.leads && placeIds.length > 0) await o.leads.record(placeIds);
  await o.onBatch?.();
  return workbook ? 0 : Buffer.byteLength(text);
}

async function* batches<T>(rows: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let batch: T[] = [];
  for await (const row of rows) {
    batch.push(row);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/** A coordinate as a spreadsheet may write it (`48,137` where the comma is the decimal mark); NaN when it is not one. */
function coordinate(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.includes('.') ? text : text.replace(',', '.');
  return /^[-+]?\d+(\.\d+)?$/.test(t) ? Number(t) : Number.NaN;
}

/** The record a row of the list is, through the mapping; its `ref` is the row's number. */
export function recordOf(list: Pick<OpenedList, 'headers'>, row: ListRow, mapping: ColumnMapping): MatchRecordInput {
  const value = (field: keyof ColumnMapping) => {
    const header = mapping[field];
    return header === undefined ? undefined : cellOf(list, row, header);
  };
  const record: MatchRecordInput = { ref: String(row.index) };
  for (const field of ['name', 'address', 'street', 'housenumber', 'postcode', 'city', 'country', 'phone', 'website', 'email'] as const) {
    const v = value(field);
    if (v !== undefined) record[field] = v;
  }
  const lat = coordinate(value('lat'));
  const lon = coordinate(value('lon'));
  if (lat !== undefined) record.lat = lat;
  if (lon !== undefined) record.lon = lon;
  return record;
}

/** The rows of the result file: the list's own cells as they were, then the result columns. */
class ResultWriter {
  constructor(
    private readonly list: OpenedList,
    private readonly headers: readonly string[],
    private readonly format: ListFormat,
  ) {}

  /** CSV: a BOM (Excel reads UTF-8 by it) and the header row; NDJSON has none, a workbook its own. */
  header(): string {
    if (this.format !== 'csv') return '';
    return `\uFEFF${this.line([...this.headers, ...resultColumns])}`;
  }

  row(row: ListRow, decision: Decision, result: ListMatchResult | undefined, threshold: number | null): string {
    const appended = resultCells(decision, result, row.problem, threshold);
    if (this.format === 'ndjson') {
      const out: Record<string, unknown> = { ...(row.object ?? {}) };
      resultColumns.forEach((c, i) => {
        out[c] = appended[i] ?? null;
      });
      return `${JSON.stringify(out)}\n`;
    }
    const own = Array.from({ length: this.headers.length }, (_, i) => row.cells?.[i] ?? '');
    return this.line([...own, ...appended.map((c) => (typeof c === 'string' ? guardFormula(c) : c))]);
  }

  /** A workbook's row: the list's own cells (numbers as numbers), then the result's, typed (never formulas). */
  cells(row: ListRow, decision: Decision, result: ListMatchResult | undefined, threshold: number | null): Cell[] {
    const own: Cell[] = Array.from({ length: this.headers.length }, (_, i) => row.cells?.[i] ?? '');
    for (const i of row.numeric ?? []) {
      const n = Number(own[i]);
      if (i < own.length && Number.isFinite(n)) own[i] = n;
    }
    return [...own, ...resultCells(decision, result, row.problem, threshold)];
  }

  /** One record of the list's own CSV dialect (its delimiter), RFC 4180 quoting, CRLF. */
  private line(cells: ReadonlyArray<string | number | null>): string {
    const d = this.list.format === 'csv' ? this.list.delimiter : ',';
    return `${cells
      .map((c) => {
        if (c === null) return '';
        const s = String(c);
        return s.includes(d) || /["\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
      })
      .join(d)}\r\n`;
  }
}

/** The values of `resultColumns` for one row. */
function resultCells(
  decision: Decision,
  result: ListMatchResult | undefined,
  problem: string | undefined,
  threshold: number | null,
): Array<string | number | null> {
  const m = result?.match;
  const p = m?.place;
  const best = m ? m.score : (result?.candidates[0]?.score ?? null);
  const reason =
    decision === 'bad_row'
      ? (problem ?? result?.error?.detail ?? 'the row could not be read')
      : decision === 'unmatched'
        ? result?.candidates[0]
          ? `no candidate is sure enough: the best, ${result.candidates[0].id}, scored ${result.candidates[0].score.toFixed(3)}${threshold === null ? '' : ` (threshold ${threshold})`}`
          : 'no place of the catalog resembles this row'
        : null;
  const address = p
    ? (p.address ??
      ([[p.street, p.housenumber].filter(Boolean).join(' '), [p.postcode, p.city].filter(Boolean).join(' ')]
        .filter((s) => s !== '')
        .join(', ') ||
        null))
    : null;
  return [
    p?.id ?? null,
    best === null ? null : Math.round(best * 1000) / 1000,
    decision,
    p?.name ?? null,
    p?.category ?? null,
    p?.status ?? null,
    p?.phone ?? null,
    p?.email ?? null,
    p?.website ?? null,
    p ? p.socials.join(';') || null : null,
    address,
    reason,
  ];
}
