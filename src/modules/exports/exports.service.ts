import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Db } from '../../infra/db/database.ts';
import { bulkNamesIndex, streamPlaceTuples, type BulkPlaceTuple } from '../places/places.stream.ts';
import { placeFields, publicColumnIndex, type PlaceField, type PublicPlaceTuple } from '../places/places.schema.ts';
import { getSearchForAccount, parseFields, searchNameCheck, type SavedSearch } from '../search/search.service.ts';
import { attachmentDisposition, exportFilename } from './content-disposition.ts';
import { createLeadRecorder, finishExport, insertExport, type ExportRow, type LeadRecorder } from './exports.repository.ts';
import type { PlaceBatches } from './formats/cells.ts';
import { exportFormats, type ExportFormatName } from './formats/index.ts';

/** Rows read and written per step: one query, one chunk of output, one leads transaction. */
export const exportBatchSize = 1000;

export interface ExportRequest {
  accountId: number;
  searchId: string;
  format: ExportFormatName;
  /** Comma-separated field names as the caller sent them; all fields when absent. */
  fields: string | undefined;
}

/**
 * The account's export quotas, asked when an export starts and as it writes (implemented by
 * `QuotaService` in modules/auth): every caller of `startExport` passes one, so no way of starting
 * an export can skip them.
 */
export interface ExportAllowance {
  /** Refuses (`quota_exceeded`, with Retry-After) an account running its maximum of exports at once or with no rows left this month. */
  open(accountId: number): Promise<ExportPermit>;
}

export interface ExportPermit {
  /** Takes up to `wanted` rows from the month's quota and returns how many it may write (0: the quota is spent). */
  reserve(wanted: number): Promise<number>;
  /** The rows last reserved reached the response. */
  confirm(): void;
  /** Gives back rows reserved but never written and frees the export's concurrency slot; safe to call again. */
  close(): Promise<void>;
}

export interface StartedExport {
  exportId: string;
  contentType: string;
  contentDisposition: string;
  body: Readable;
}

/**
 * Starts streaming every place of a saved search in the chosen format. The search must belong to the
 * account (another account's id is `not_found`, like an unknown one).
 *
 * Leads: each batch becomes leads of the account once the format writer has taken it and asks for
 * the next one, in a transaction of its own (see `LeadRecorder`). A download cut short
 * therefore counts the batches already handed to the response, and the export is logged `aborted`
 * with that row count; the batch in flight when the client left is not counted. Memory stays at
 * about one batch whatever the size of the search.
 *
 * Quotas: the export is refused up front when the account has no rows left this month or runs its
 * maximum of exports; otherwise each batch first takes its rows from the month's quota, and an export
 * that reaches the quota ends there, as a complete file of that many rows, logged `limited`.
 */
export async function startExport(db: Db, request: ExportRequest, allowance: ExportAllowance, now = new Date()): Promise<StartedExport> {
  const fields = parseFields(request.fields);
  const chosen: PlaceField[] = fields.length > 0 ? fields : placeFields;
  const search = await getSearchForAccount(db, request.accountId, request.searchId);
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
    const format = exportFormats[request.format];
    const labels = searchLabels(search);
    const body = format.write(recordingLeads(db, createLeadRecorder(db), exp, permit, searchMatches(db, search, exportBatchSize)), chosen);
    // Also when the stream is destroyed before its first batch was asked for (the generator never ran).
    body.once('close', () => void permit.close());
    return {
      exportId: exp.public_id,
      contentType: format.contentType,
      contentDisposition: attachmentDisposition(exportFilename({ ...labels, date: now, extension: format.extension })),
      body,
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
  const check = searchNameCheck(search);
  for await (const rows of streamPlaceTuples(db, search.criteria, batchSize, check !== null)) {
    const matches = check ? rows.filter((t) => check(t[publicColumnIndex.name] as string, t[bulkNamesIndex] as string | null)) : rows;
    if (matches.length > 0) yield matches;
  }
}

async function* recordingLeads(db: Db, leads: LeadRecorder, exp: ExportRow, permit: ExportPermit, batches: PlaceBatches): AsyncGenerator<readonly PublicPlaceTuple[]> {
  const id = publicColumnIndex.id;
  let status: 'done' | 'aborted' | 'failed' | 'limited' = 'aborted';
  try {
    let limited = false;
    for await (const batch of batches) {
      const granted = await permit.reserve(batch.length);
      const part = granted < batch.length ? batch.slice(0, granted) : batch;
      if (part.length > 0) {
        yield part;
        // Reached only when the writer asks for the next batch: this one is in the response stream.
        await leads.recordBatch(exp, part.map((t) => t[id] as number), new Date().toISOString());
        permit.confirm();
      }
      if (granted < batch.length) {
        limited = true;
        break;
      }
    }
    status = limited ? 'limited' : 'done';
  } catch (err) {
    status = 'failed';
    throw err;
  } finally {
    await permit.close();
    await finishExport(db, exp.id, status, new Date().toISOString());
  }
}
