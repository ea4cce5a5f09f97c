import { type Kysely, sql } from 'kysely';
import { doubleType } from './helpers.ts';

/**
 * Trust in each contact (issue #33; docs/trust.md).
 *
 * On `places` (written only by the trust pass, `src/modules/trust/`, through the places module):
 * `contact_trust`, JSON of what is known of each email, phone and website of the place (its sources' and
 * what its website gave): status, the kind's evidence, the sources carrying it, the model's confidence,
 * first and last seen, the last check (`contacts/evidence.ts`, `StoredTrust`). Beside the place row, so every
 * read that shows the place (details, search pages, exports) has it without another query.
 *
 * `trust_state`: the places version the pass has caught up to, and the model version it computed with (a
 * new model recomputes everything).
 *
 * Also on `places`, the summary a search filters on, the
 * place's best value of each kind (highest confidence): `email_status`, `email_confidence`, `phone_type`,
 * `phone_confidence`, `website_status`, `website_confidence`; `lead_score` (0–1); `verified_at` (the latest
 * `checked_at` of its values). Null until the pass has seen the place, or when it has no value of the kind.
 *
 * On `enrich_sites` (the enrichment's): the website status of the last fetch, `site_status`, the
 * registrable domain it ended on (`final_domain`) and when (`status_checked_at`); existing crawls get a
 * status from their outcome (a parked page needs the page, which was not kept: `live` until the next crawl).
 *
 * `email_domains` (the enrichment's): the last DNS verdict per domain, `valid_domain|no_mx|unknown`, and
 * when, so that an address a source gave is judged by the checks made for the same domain.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const double = doubleType(db);
  await db.schema
    .createTable('trust_state')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('places_version', 'bigint', (c) => c.notNull())
    .addColumn('model_version', 'text', (c) => c.notNull())
    .addColumn('computed_at', 'text', (c) => c.notNull())
    .execute();

  for (const column of ['contact_trust', 'email_status', 'phone_type', 'website_status', 'verified_at']) {
    await db.schema.alterTable('places').addColumn(column, 'text').execute();
  }
  for (const column of ['email_confidence', 'phone_confidence', 'website_confidence', 'lead_score']) {
    await db.schema.alterTable('places').addColumn(column, double).execute();
  }

  for (const column of ['site_status', 'final_domain', 'status_checked_at']) {
    await db.schema.alterTable('enrich_sites').addColumn(column, 'text').execute();
  }
  await sql`UPDATE enrich_sites SET site_status = CASE
      WHEN outcome IN ('ok', 'not_modified', 'not_html', 'too_large', 'javascript_only') THEN 'live'
      WHEN outcome IN ('dns_error', 'unreachable') THEN 'dead'
      ELSE 'unknown' END, status_checked_at = crawled_at
    WHERE crawled_at IS NOT NULL`.execute(db);

  await db.schema
    .createTable('email_domains')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('checked_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('email_domains').execute();
  for (const column of ['status_checked_at', 'final_domain', 'site_status']) {
    await db.schema.alterTable('enrich_sites').dropColumn(column).execute();
  }
  for (const column of [
    'lead_score',
    'website_confidence',
    'phone_confidence',
    'email_confidence',
    'verified_at',
    'website_status',
    'phone_type',
    'email_status',
  ]) {
    await db.schema.alterTable('places').dropColumn(column).execute();
  }
  await db.schema.alterTable('places').dropColumn('contact_trust').execute();
  await db.schema.dropTable('trust_state').execute();
}
