import { sql } from 'kysely';
import type { Db } from '../../infra/db/database.ts';
import { recordEmailDomains } from './enrichment.repository.ts';

/**
 * The SQL of re-verification (`verify.ts`): the websites and email domains whose last check is older than a
 * cutoff, and their new statuses. Only the status columns are written: a site's crawl state (queue, lease,
 * contacts) stays the crawler's.
 */

export interface SiteToVerify {
  id: number;
  url: string;
  site_status: string | null;
  final_domain: string | null;
}

/** Sites crawled once whose status was established before `cutoff` (ISO), oldest check first, at most `limit`. */
export async function sitesToVerify(db: Db, cutoff: string, limit: number): Promise<SiteToVerify[]> {
  const rows = await db.kysely
    .selectFrom('enrich_sites')
    .select(['id', 'url', 'site_status', 'final_domain'])
    .where('crawled_at', 'is not', null)
    .where((eb) => eb.or([eb('status_checked_at', 'is', null), eb('status_checked_at', '<', cutoff)]))
    .orderBy(sql`coalesce(status_checked_at, '')`)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

export async function saveSiteStatuses(
  db: Db,
  statuses: ReadonlyArray<{ id: number; site_status: string; final_domain: string | null; status_checked_at: string }>,
): Promise<void> {
  if (statuses.length === 0) return;
  await db.kysely.transaction().execute(async (trx) => {
    for (const { id, ...status } of statuses) await trx.updateTable('enrich_sites').set(status).where('id', '=', id).execute();
  });
}

/** Email domains checked before `cutoff`, oldest first, at most `limit`. */
export async function domainsToVerify(db: Db, cutoff: string, limit: number): Promise<Array<{ domain: string; status: string }>> {
  return db.kysely
    .selectFrom('email_domains')
    .select(['domain', 'status'])
    .where('checked_at', '<', cutoff)
    .orderBy('checked_at')
    .orderBy('domain')
    .limit(limit)
    .execute();
}

export async function saveDomainVerdicts(
  db: Db,
  verdicts: ReadonlyArray<{ domain: string; status: 'valid_domain' | 'no_mx' | 'unknown' }>,
  at: string,
): Promise<void> {
  if (verdicts.length === 0) return;
  await db.kysely.transaction().execute((trx) => recordEmailDomains(trx, verdicts, at));
}
