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
 */
export async function startExport(db: Db, request: ExportRequest, now = new Date()): Promise<StartedExport> {
  const fields = parseFields(request.fields);
  const chosen: PlaceField[] = fields.length > 0 ? fields : placeFields;
  const search = await getSearchForAccount(db, request.accountId, request.searchId);
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
  return {
    exportId: exp.public_id,
    contentType: format.contentType,
    contentDisposition: attachmentDisposition(exportFilename({ ...labels, date: now, extension: format.extension })),
    body: format.write(recordingLeads(db, createLeadRecorder(db), exp, searchMatches(db, search, exportBatchSize)), chosen),
  };
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

async function* recordingLeads(db: Db, leads: LeadRecorder, exp: ExportRow, batches: PlaceBatches): AsyncGenerator<readonly PublicPlaceTuple[]> {
  const id = publicColumnIndex.id;
  let status: 'done' | 'aborted' | 'failed' = 'aborted';
  try {
    for await (const batch of batches) {
      yield batch;
      // Reached only when the writer asks for the next batch: this one is in the response stream.
      await leads.recordBatch(exp, batch.map((t) => t[id] as number), new Date().toISOString());
    }
    status = 'done';
  } catch (err) {
    status = 'failed';
    throw err;
  } finally {
    await finishExport(db, exp.id, status, new Date().toISOString());
  }
}
