import { randomBytes } from 'node:crypto';
import type { Db } from '../../infra/db/database.ts';
import { createLeadRecorder, type ExportStatus, finishExport, insertExport } from './exports.repository.ts';

/** Places handed to an account by another way than a download, recorded as its leads. */
export interface HandedLeads {
  /** These places (internal ids) become leads of the account, in one short transaction. */
  record(placeIds: readonly number[]): Promise<void>;
  /** The log entry ends: `done`, or `aborted` for an attempt cut short (its leads stay). */
  finish(status: ExportStatus): Promise<void>;
}

/**
 * Leads made by something other than an export, such as a match job run with `as_leads`: the account has these
 * businesses already, so `only_new` searches and exports leave them out. They are recorded exactly as an
 * export's (one row per account and place, `first_exported_at` kept) under an entry of the export log of
 * format `source` (`match`), whose `search_id` is the id of what made them (a match job's `mjob_…`).
 */
export async function openHandedLeads(db: Db, o: { accountId: number; sourceId: string; source: string }): Promise<HandedLeads> {
  const exp = await insertExport(db, {
    public_id: `exp_${randomBytes(10).toString('base64url')}`,
    account_id: o.accountId,
    search_id: o.sourceId,
    format: o.source,
    fields: '[]',
    created_at: new Date().toISOString(),
  });
  const recorder = createLeadRecorder(db);
  const row = { ...exp, id: Number(exp.id), account_id: Number(exp.account_id) };
  return {
    record: (placeIds) => recorder.recordBatch(row, placeIds, new Date().toISOString()),
    finish: (status) => finishExport(db, row.id, status, new Date().toISOString()),
  };
}
