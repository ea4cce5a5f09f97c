import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Db } from '../../infra/db/database.ts';
import type { ExportAllowance, ExportPermit } from '../auth/quotas.service.ts';
import { type PlaceField, type PublicPlaceTuple, parseFields, placeFields, publicColumnIndex } from '../places/places.schema.ts';
import { searchRowCheck } from '../search/bulk-reads.ts';
import { trueOpenCriteria } from '../search/open-filter.ts';
import { type BulkPlaceTuple, bulkNamesIndex, streamPlaceTuples } from '../search/query/place-stream.ts';
import { getSearchForAccount, searchAsItRunsNow } from '../search/saved-searches.ts';
import type { SavedSearch } from '../search/search.types.ts';
import { attachmentDisposition, exportFilename } from './content-disposition.ts';
import { DeliveryLedger } from './delivery.ts';
import {
  createLeadRecorder,
  type ExportRow,
  type ExportStatus,
  finishExport,
  insertExport,
  listRecentExports,
} from './exports.repository.ts';
import type { PlaceBatches } from './formats/cells.ts';
import { type ExportFormat, type ExportFormatName, exportFormats } from './formats/index.ts';

/** An export as the account's export log shows it. */
export interface ExportSummary {
  id: string;
  searchId: string;
  format: string;
  rows: number;
  status: ExportRow['status'];
  createdAt: string;
  finishedAt: string | null;
}

/** The account's most recent exports (downloads; export jobs are listed by export-jobs.service.ts), newest first. */
export async function recentExports(db: Db, accountId: number, limit: number): Promise<ExportSummary[]> {
  const rows = await listRecentExports(db, accountId, limit);
  return rows.map((r) => ({
    id: r.public_id,
    searchId: r.search_id,
    format: r.format,
    rows: Number(r.row_count),
    status: r.status,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  }));
}

/** Rows read and written per step: one query, one chunk of output, one leads transaction. */
export const exportBatchSize = 1000;

export interface ExportRequest {
  accountId: number;
  searchId: string;
  format: ExportFormatName;
  /** Comma-separated field names as the caller sent them; all fields when absent. */
  fields: string | undefined;
  /** Only places the account has not exported before; undefined: as the search was made. */
  onlyNew?: boolean;
}

export interface StartedExport {
  exportId: string;
  contentType: string;
  contentDisposition: string;
  /** The file, streamed: rows are read as the response takes the text. */
  body: Readable;
  /** Where the response reports the body bytes it has flushed (see `DeliveryLedger`). */
  delivery: Pick<DeliveryLedger, 'bodyFlushed'>;
  /**
   * The response is over: `complete` when every byte was flushed. Records the places delivered as leads
   * (those not yet recorded), and logs the export `done`, `aborted` (cut short) or `failed` (a read or
   * write error), with the number of places delivered.
   */
  finish(complete: boolean): Promise<void>;
}

/**
 * Starts streaming every place of a saved search in the chosen format. The search must belong to the
 * account (another account's id is `not_found`, like an unknown one).
 *
 * Leads: a place becomes a lead of the account once the bytes that carry it have been flushed to the
 * client's connection (`DeliveryLedger` says precisely what that means), each delivered batch in a
 * short transaction of its own together with the export's `row_count`. A download cut short keeps the
 * leads of what was delivered and is logged `aborted`. Memory stays at about one batch (a workbook also
 * keeps the ids of its places until it is complete).
 *
 * Quotas: the export is refused up front when the account has no rows left this month or runs its
 * maximum of exports at once; otherwise each batch first takes its rows from the month's quota, and an
 * export that reaches the quota ends there, as a complete file of that many rows, logged `limited`.
 * Rows taken for batches that were never delivered are given back when the export ends.
 */
export async function startExport(db: Db, request: ExportRequest, allowance: ExportAllowance, now = new Date()): Promise<StartedExport> {
  const fields = parseFields(request.fields);
  const chosen: PlaceField[] = fields.length > 0 ? fields : placeFields;
  // The account's suppression list as it is now, and with only_new its leads as they are now.
  const search = await searchAsItRunsNow(db, await getSearchForAccount(db, request.accountId, request.searchId), request.onlyNew);
  const permit = await allowance.open(request.accountId);
  try {
    const exp = await insertExport(db, {
      public_id: `exp_${randomBytes(10).toString('base64url')}`,
      account_id: request.accountId,
      search_id: search.id,
      format: request.format,
      fields: JSON.stringify(chosen),
      created_at: now.toISOString(),
    });
    const format: ExportFormat = exportFormats[request.format];
    const labels = searchLabels(search);
    const leads = createLeadRecorder(db);
    const ledger = new DeliveryLedger(async (ids) => {
      await leads.recordBatch(exp, ids, new Date().toISOString());
      permit.delivered(ids.length);
    }, format.chunks !== undefined);
    const outcome = { failed: false, limited: false };
    const batches = producedBatches(searchMatches(db, search, exportBatchSize), ledger, permit, outcome);
    const body = format.chunks
      ? Readable.from(countedChunks(format.chunks(batches, chosen), ledger), { objectMode: false })
      : format.write(batches, chosen);
    body.once('error', () => (outcome.failed = true));
    let finished: Promise<void> | undefined;
    return {
      exportId: exp.public_id,
      contentType: format.contentType,
      contentDisposition: attachmentDisposition(exportFilename({ ...labels, date: now, extension: format.extension })),
      body,
      delivery: ledger,
      finish(complete) {
        finished ??= (async () => {
          let status: ExportStatus = outcome.failed ? 'failed' : !complete ? 'aborted' : outcome.limited ? 'limited' : 'done';
          try {
            await ledger.close(complete && !outcome.failed);
          } catch (error) {
            status = 'failed';
            throw error;
          } finally {
            try {
              await permit.close();
            } finally {
              await finishExport(db, exp.id, status, new Date().toISOString());
            }
          }
        })();
        return finished;
      },
    };
  } catch (error) {
    await permit.close();
    throw error;
  }
}

/** City and type for the file name: the names the search resolved to, else what the caller typed. */
function searchLabels(search: SavedSearch): { city: string | null; type: string | null } {
  return {
    city: search.resolution.city?.chosen.name ?? search.params.city ?? search.resolution.country?.name ?? search.params.country ?? null,
    type: search.resolution.type?.slug ?? search.params.type ?? search.params.query ?? null,
  };
}

/**
 * Every place of the search in id order, as row arrays (see `streamPlaceTuples`). Fuzzy text criteria
 * select candidates; the edit distance on every name decides, as for the search's own pages.
 */
async function* searchMatches(db: Db, search: SavedSearch, batchSize: number): AsyncGenerator<BulkPlaceTuple[]> {
  const check = searchRowCheck(search);
  for await (const rows of streamPlaceTuples(db, await trueOpenCriteria(db, search.criteria), batchSize, check !== null)) {
    const matches = check
      ? rows.filter((t) =>
          check(
            t[publicColumnIndex.name] as string,
            t[bulkNamesIndex] as string | null,
            t[publicColumnIndex.lon] as number | null,
            t[publicColumnIndex.lat] as number | null,
          ),
        )
      : rows;
    if (matches.length > 0) yield matches;
  }
}

/**
 * The batches as the format writer takes them, each first taken from the month's row quota (cut to what
 * is left, and the export ends there); each is reported to the ledger once the writer has turned it into text.
 */
async function* producedBatches(
  batches: PlaceBatches,
  ledger: DeliveryLedger,
  permit: ExportPermit,
  outcome: { failed: boolean; limited: boolean },
): AsyncGenerator<readonly PublicPlaceTuple[]> {
  const id = publicColumnIndex.id;
  try {
    for await (const batch of batches) {
      const granted = await permit.reserve(batch.length);
      const part = granted < batch.length ? batch.slice(0, granted) : batch;
      if (part.length > 0) {
        yield part;
        // Reached when the writer asks for the next batch: this one's text has been produced.
        ledger.batchProduced(part.map((t) => t[id] as number));
      }
      if (granted < batch.length) {
        outcome.limited = true;
        return;
      }
    }
  } catch (error) {
    outcome.failed = true;
    throw error;
  }
}

/**
 * A text format's chunks, counted on their way into the response. The body ends only once every batch has
 * been flushed and recorded: a client that has the whole file also has its leads.
 */
async function* countedChunks(chunks: AsyncIterable<string>, ledger: DeliveryLedger): AsyncGenerator<string> {
  for await (const chunk of chunks) {
    ledger.produce(Buffer.byteLength(chunk));
    yield chunk;
  }
  await ledger.drained();
}
