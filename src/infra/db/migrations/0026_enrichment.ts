import { type Kysely, sql } from 'kysely';
import { serialType } from './helpers.ts';

/**
 * Contact enrichment (issue #22; `src/modules/enrichment/README.md`, "Pipeline").
 *
 * `enrich_sites`: the durable queue, one row a site (a normalised website, or the domain of an email when a
 * place has no website), so a site that many places share is fetched once for all of them. `queued` →
 * `running` (a lease its process renews; a lapsed lease is taken again) → `done`, due again at `due_at`
 * (the refresh period after a crawl, sooner after a rate limit). Every crawl leaves its outcome and reason,
 * the validators a re-crawl sends (`etag`, `last_modified`) and what it found (`contacts`, JSON with each
 * item's page and fetch time, emails with their DNS verdict).
 *
 * On `places`: `source_contacts` is part of the imported record (its source's own contact lists,
 * normalised; written by the place writers and covered by the content hash). The other columns are the
 * enrichment's and no writer touches them: `enrich_site_id` the site the place was queued under,
 * `enrich_basis` the website (or email) that site was derived from, and what the site gave the place
 * (`found_contacts`, and the first email and phone and whether it has a social profile, for filters).
 * They count only while `enrich_basis` is still the place's website (or email): a re-import that changes
 * the website hides them at once, without rewriting anything.
 *
 * `place_found_keys`: every email, email domain and phone found for a place, what suppression lists
 * are compared with.
 *
 * `enrichment_jobs` and `enrichment_job_sites`: `POST /api/v2/enrichments` (a saved search's places first
 * in the queue), with the monthly quota of places an account may enrich (`enrich_usage`,
 * `account_quotas.enrich_places_per_month`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('enrich_sites')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('site_key', 'text', (c) => c.notNull().unique())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('country_code', 'text')
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('due_at', 'text', (c) => c.notNull())
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('crawled_at', 'text')
    .addColumn('outcome', 'text')
    .addColumn('reason', 'text')
    .addColumn('pages', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('etag', 'text')
    .addColumn('last_modified', 'text')
    .addColumn('contacts', 'text')
    .execute();
  await db.schema.createIndex('enrich_sites_due_idx').on('enrich_sites').columns(['status', 'due_at']).execute();

  for (const column of ['source_contacts', 'enrich_basis', 'found_contacts', 'found_email', 'found_phone']) {
    await db.schema.alterTable('places').addColumn(column, 'text').execute();
  }
  await db.schema.alterTable('places').addColumn('enrich_site_id', 'bigint').execute();
  await db.schema
    .alterTable('places')
    .addColumn('found_social', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Only enriched places are in it: an import's inserts (null) never touch it.
  await sql`CREATE INDEX places_enrich_site_idx ON places (enrich_site_id) WHERE enrich_site_id IS NOT NULL`.execute(db);

  // A row id of its own, as `place_match_keys`: what `db copy` reads, resumes and checks by.
  await db.schema
    .createTable('place_found_keys')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('place_id', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('place_found_keys_place_idx').on('place_found_keys').columns(['place_id', 'kind', 'key']).unique().execute();

  await db.schema
    .createTable('enrichment_jobs')
    .addColumn('id', serialType(db), (c) => c.primaryKey())
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('search_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('place_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('limited', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('site_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sites_done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('places_with_email', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('charged_places', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('charged_month', 'text')
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .execute();
  await db.schema.createIndex('enrichment_jobs_account_idx').on('enrichment_jobs').columns(['account_id', 'id']).execute();
  await db.schema.createIndex('enrichment_jobs_status_idx').on('enrichment_jobs').columns(['status', 'id']).execute();
  await db.schema
    .createTable('enrichment_job_sites')
    .addColumn('job_id', 'bigint', (c) => c.notNull().references('enrichment_jobs.id').onDelete('cascade'))
    .addColumn('site_id', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('enrichment_job_sites_pk', ['job_id', 'site_id'])
    .execute();

  await db.schema.alterTable('account_quotas').addColumn('enrich_places_per_month', 'bigint').execute();
  await db.schema
    .createTable('enrich_usage')
    .addColumn('account_id', 'bigint', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('place_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('enrich_usage_pk', ['account_id', 'month'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('enrich_usage').execute();
  await db.schema.alterTable('account_quotas').dropColumn('enrich_places_per_month').execute();
  await db.schema.dropTable('enrichment_job_sites').execute();
  await db.schema.dropTable('enrichment_jobs').execute();
  await db.schema.dropTable('place_found_keys').execute();
  await sql`DROP INDEX IF EXISTS places_enrich_site_idx`.execute(db);
  for (const column of [
    'found_social',
    'enrich_site_id',
    'found_phone',
    'found_email',
    'found_contacts',
    'enrich_basis',
    'source_contacts',
  ]) {
    await db.schema.alterTable('places').dropColumn(column).execute();
  }
  await db.schema.dropTable('enrich_sites').execute();
}
