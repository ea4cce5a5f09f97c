import type { Generated } from 'kysely';
import type { MatchTables } from './schema.match.ts';
import type {
  CategoriesTable,
  CategoryNamesTable,
  CitiesTable,
  CityNamesTable,
  CountriesTable,
  CountryNamesTable,
  ReferenceDataTable,
} from './schema.reference.ts';
import type { PlaceTrustColumns, SiteStatusColumns, TrustTables } from './schema.trust.ts';

/**
 * Row types of every table, as the database stores them. These never reach the HTTP layer: services map them to the
 * public shapes in each module's *.schema.ts. Portable conventions (the same migration chain serves SQLite and
 * PostgreSQL): timestamps are ISO-8601 UTC strings (`2026-11-21T05:49:00.000Z`, lexically sortable), booleans are 0/1
 * integers, structured values are JSON text. The match jobs' tables are in schema.match.ts.
 */
export interface Database extends TrustTables, MatchTables {
  places: PlacesTable;
  import_runs: ImportRunsTable;
  import_run_parts: ImportRunPartsTable;
  replication_state: ReplicationStateTable;
  monitors: MonitorsTable;
  monitor_places: MonitorPlacesTable;
  monitor_events: MonitorEventsTable;
  categories: CategoriesTable;
  category_names: CategoryNamesTable;
  countries: CountriesTable;
  country_names: CountryNamesTable;
  cities: CitiesTable;
  city_names: CityNamesTable;
  reference_data: ReferenceDataTable;
  accounts: AccountsTable;
  sessions: SessionsTable;
  api_tokens: ApiTokensTable;
  usage_daily: UsageDailyTable;
  exports: ExportsTable;
  leads: LeadsTable;
  account_quotas: AccountQuotasTable;
  export_row_usage: ExportRowUsageTable;
  export_jobs: ExportJobsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  account_webhook_secrets: AccountWebhookSecretsTable;
  server_secrets: ServerSecretsTable;
  suppressions: SuppressionsTable;
  suppression_lists: SuppressionListsTable;
  suppression_uploads: SuppressionUploadsTable;
  osm_ways: OsmWaysTable;
  osm_nodes: OsmNodesTable;
  osm_node_ways: OsmNodeWaysTable;
  place_match_keys: PlaceMatchKeysTable;
  place_match_due: PlaceMatchDueTable;
  enrich_sites: EnrichSitesTable;
  place_found_keys: PlaceFoundKeysTable;
  enrichment_jobs: EnrichmentJobsTable;
  enrichment_job_sites: EnrichmentJobSitesTable;
  enrichment_job_places: EnrichmentJobPlacesTable;
  enrich_usage: EnrichUsageTable;
  place_changes: PlaceChangesTable;
  place_changes_marks: PlaceChangesMarksTable;
  place_changes_horizon: PlaceChangesHorizonTable;
}

export interface PlacesTable extends PlaceTrustColumns {
  id: Generated<number>;
  /** Stable public id, `plc_` + 16 base32 chars derived from (source, source_id). */
  public_id: string;
  source: string;
  source_id: string;
  name: string;
  /** JSON object of alternative and localised names: {"en": "...", "alt": ["..."]}. */
  names: string | null;
  /** Primary category slug (taxonomy), null when nothing in the source maps onto it. */
  category: string | null;
  /** JSON array of every category slug, primary first. */
  categories: string;
  /** JSON array of the categories as the source wrote them (`amenity=restaurant`, `Italian restaurant`). */
  source_categories: string | null;
  phone: string | null;
  phone_e164: string | null;
  website: string | null;
  /** Registrable domain of `website` (migration 0018, `registrableDomain`): what domain suppressions match. */
  website_domain: string | null;
  email: string | null;
  street: string | null;
  housenumber: string | null;
  postcode: string | null;
  /** One-line address as the source gave it, or assembled from the parts. */
  address: string | null;
  region: string | null;
  /** City name as displayed: the address city, else the assigned gazetteer city. */
  city: string | null;
  /** GeoNames id of the gazetteer city. */
  city_id: number | null;
  /** How the city was assigned: `address` (matched the address city), `address_unmatched`, `nearest` (nearest populated place), null. */
  city_source: string | null;
  /** Distance in metres to the gazetteer city's point when assigned by `nearest`. */
  city_distance_m: number | null;
  country_code: string | null;
  lat: number | null;
  lon: number | null;
  rating: number | null;
  review_count: number | null;
  opening_hours: string | null;
  /** JSON object of other attributes (cuisine, brand, price, OSM tags kept for reference...). */
  attributes: string | null;
  /** Hash of the normalised record: a re-import that finds the same hash leaves the row alone. */
  content_hash: string;
  /** 0/1: the source itself says the place is closed (part of the imported record and its hash; migration 0022). */
  closed: Generated<number>;
  /** The run that last wrote the row's content. */
  import_run_id: number | null;
  /** The last import run whose file held the place, changed or not: what retirement compares (migration 0022). */
  seen_run_id: number | null;
  first_seen_at: string;
  /** When the place's content last changed. */
  updated_at: string;
  /** When the place left search and export (closed by its source, or retired from its dataset); null while open. */
  closed_at: string | null;
  /** `closed` (the source says so), `retired` (gone from its dataset's latest snapshot), or `merged`: a record that is part of a place of several sources (`merged_into`); null while open. */
  closed_reason: 'closed' | 'retired' | 'merged' | null;
  /** A record of a place of several sources: that place's id (migration 0025); null otherwise. */
  merged_into: number | null;
  /** A place of several sources: JSON list of its records, `[{"source", "source_id"}]`, the leading one first; null for a record. */
  sources: string | null;
  /** A place of several sources: JSON object field -> the source that gave it. */
  field_sources: string | null;
  /** A place of several sources: its records' ids, hashes and states when it was last merged (what tells it to merge again). */
  merge_state: string | null;
  /**
   * SQLite only (migration 0027; absent on PostgreSQL): the search document of `name` and `names`, what the
   * triggers copy into `places_fts`. Written with the names by every writer (`places/place-text.ts`).
   */
  search_document?: string | null;
  /** SQLite only (migration 0027): the folded `city` of a place filed as `address_unmatched`, null for the others. */
  city_fold?: string | null;
  /**
   * The source's own contact lists, normalised (migration 0026, `contacts/contacts.ts`): JSON
   * `{"emails":[{"value","source"}],"phones":[…],"socials":[…]}` with empty lists left out; null when the
   * source gives none. Part of the record and its content hash.
   */
  source_contacts: string | null;
  /** Enrichment's (migration 0026; never written by an import): the site the place was queued under. */
  enrich_site_id: number | null;
  /** The website (or email) `enrich_site_id` was derived from: the found columns count only while it is still the place's. */
  enrich_basis: string | null;
  /** JSON of what the site gave the place (`FoundContacts`), with each item's page and fetch time. */
  found_contacts: string | null;
  /** The best email found (own domain first), lower-cased. */
  found_email: string | null;
  /** The first phone found, E.164 in the place's country. */
  found_phone: string | null;
  /** 1: a social profile was found. */
  found_social: Generated<number>;
}

/** A site in the enrichment queue (migration 0026): fetched once for every place that shares it. */
export interface EnrichSitesTable extends SiteStatusColumns {
  id: Generated<number>;
  /** Normalised website (`example.com/fr`, no scheme, `www.` or trailing slash) or an email's domain. */
  site_key: string;
  /** What the crawler starts from. */
  url: string;
  /** Country of the first place queued under it: the country its phones are read in. */
  country_code: string | null;
  /** Higher first (a job of `POST /api/v2/enrichments` raises its sites). */
  priority: Generated<number>;
  status: 'queued' | 'running' | 'done';
  /** When it may be taken (again). */
  due_at: string;
  runner: string | null;
  lease_until: string | null;
  attempts: Generated<number>;
  crawled_at: string | null;
  /** The crawler's outcome (`ok`, `not_modified`, `robots_disallowed`, `timeout`…) and its reason. */
  outcome: string | null;
  reason: string | null;
  pages: Generated<number>;
  etag: string | null;
  last_modified: string | null;
  /** JSON `SiteContacts`: what the last crawl that read pages found. */
  contacts: string | null;
}

/** Emails, email domains and phones found for a place (migration 0026): what suppression lists compare. */
export interface PlaceFoundKeysTable {
  id: Generated<number>;
  place_id: number;
  kind: 'email' | 'domain' | 'phone';
  key: string;
}

/** `POST /api/v2/enrichments` (migration 0026): a saved search's places first in the enrichment queue. */
export interface EnrichmentJobsTable {
  id: Generated<number>;
  /** `enr_` + random. */
  public_id: string;
  account_id: number;
  search_id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  failure: string | null;
  attempts: Generated<number>;
  place_count: Generated<number>;
  /** 1: the search had more places than the month's quota left. */
  limited: Generated<number>;
  site_count: Generated<number>;
  sites_done: Generated<number>;
  places_with_email: Generated<number>;
  /** Places taken from the month's enrichment quota (`charged_month`), given back when an attempt is abandoned. */
  charged_places: Generated<number>;
  charged_month: string | null;
  /** Told with a signed POST when the job ends (migration 0029). */
  webhook_url: string | null;
  runner: string | null;
  lease_until: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface EnrichmentJobSitesTable {
  job_id: number;
  site_id: number;
}

/** The places an enrichment job queued, within its quota (migration 0029): what its counts are about. */
export interface EnrichmentJobPlacesTable {
  job_id: number;
  place_id: number;
}

/** Places an account's enrichment jobs queued in a UTC calendar month. */
export interface EnrichUsageTable {
  account_id: number;
  month: string;
  place_count: Generated<number>;
}

/** A record due for conflation (migration 0025): new, or changed since it was last conflated. */
/** A place inserted, updated or deleted at a places version (migration 0028). */
export interface PlaceChangesTable {
  version: number;
  place_id: number;
}

/** The places version at a moment: what pruning the change log by age goes by. */
export interface PlaceChangesMarksTable {
  version: number;
  marked_at: string;
}

/** One row: the largest version the change log no longer holds. */
export interface PlaceChangesHorizonTable {
  id: number;
  pruned_through: number;
}

export interface PlaceMatchDueTable {
  place_id: number;
  /** 1: the record changed (its old blocking keys go first); 0: new. */
  changed: number;
}

export interface PlaceMatchKeysTable {
  id: Generated<number>;
  /** A blocking key (`conflation/blocking.ts`): `c:<cell>:<word>`, `p:<E.164>`, `d:<domain>`. */
  key: string;
  /** The record (a row of `places`) indexed under it. */
  place_id: number;
}

export interface ImportRunsTable {
  id: Generated<number>;
  source: string;
  format: string;
  path: string;
  /** SHA-256 of the file, hex; '' until the run is done (it is read on a thread of its own alongside the import). */
  file_sha256: string;
  status: 'running' | 'done' | 'failed';
  started_at: string;
  finished_at: string | null;
  read_count: Generated<number>;
  imported_count: Generated<number>;
  updated_count: Generated<number>;
  unchanged_count: Generated<number>;
  skipped_count: Generated<number>;
  /** JSON object reason -> count. */
  skipped_reasons: Generated<string>;
  error: string | null;
  /** The named snapshot the run imported (migration 0022): re-importing it retires what it no longer holds. */
  dataset: Generated<string>;
  /** Places of the dataset the run retired when it completed. */
  retired_count: Generated<number>;
}

/** The replication feed a dataset follows and the last change file applied (migration 0030). */
/** The parts of a split release that a run has written whole (migration 0034): what resuming it skips. */
export interface ImportRunPartsTable {
  run_id: number;
  part: string;
  finished_at: string;
}

export interface ReplicationStateTable {
  dataset: string;
  source: string;
  url: string;
  sequence: number;
  /** The feed's timestamp of that change file (ISO-8601). */
  timestamp: string;
  updated_at: string;
}

/** A saved search's criteria watched for an account (migration 0030, `modules/monitors`). */
export interface MonitorsTable {
  id: Generated<number>;
  /** `mon_` + random. */
  public_id: string;
  account_id: number;
  search_id: string;
  /** JSON of the saved search's criteria (`MonitorCriteria`). */
  criteria: string;
  /** Comma-separated event kinds the monitor records: added, closed, changed. */
  events: string;
  webhook_url: string | null;
  status: 'active' | 'paused';
  /** The places version the monitor was last evaluated at. */
  version: number;
  place_count: Generated<number>;
  created_at: string;
  updated_at: string;
}

/** A place a monitor's search holds, with its content hash at the last evaluation. */
export interface MonitorPlacesTable {
  monitor_id: number;
  place_id: number;
  content_hash: string;
  /** JSON of the watched fields (`monitors.repository.ts`, `watchedFields`). */
  snapshot: string;
}

export interface MonitorEventsTable {
  id: Generated<number>;
  monitor_id: number;
  kind: 'added' | 'closed' | 'changed';
  place_id: number;
  /** JSON array of the public fields that changed (`changed` events; [] otherwise). */
  changed_fields: string;
  version: number;
  created_at: string;
}

export interface AccountsTable {
  id: Generated<number>;
  /** The address as the user typed it. */
  email: string;
  /** Trimmed and lower-cased: the unique key. */
  email_norm: string;
  /** argon2id PHC string; the password itself is never stored. */
  password_hash: string;
  created_at: string;
  password_changed_at: string;
}

export interface SessionsTable {
  /** SHA-256 (hex) of the session cookie value. */
  id_hash: string;
  account_id: number;
  /** Synchronizer token every state-changing dashboard form must echo. */
  csrf_token: string;
  created_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
}

export interface ApiTokensTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  /** `la_pat_` and the first characters of the random part, shown in lists. */
  display_prefix: string;
  /** SHA-256 (hex) of the whole token. */
  token_hash: string;
  /** JSON array of scopes. */
  scopes: string;
  created_at: string;
  /** Null: the token never expires. */
  expires_at: string | null;
  last_used_at: string | null;
  last_used_ip: string | null;
  revoked_at: string | null;
  /** The token that replaced this one. */
  rotated_to_id: number | null;
  /** A rotated token keeps working until then. */
  grace_until: string | null;
}

export interface UsageDailyTable {
  account_id: number;
  /** UTC day, `2026-11-21`. */
  day: string;
  /** The route pattern, e.g. `/api/v1/searches/:id`. */
  route: string;
  count: number;
}

export interface ExportsTable {
  id: Generated<number>;
  /** `exp_` + random, shown in the dashboard and sent as the `x-export-id` header. */
  public_id: string;
  account_id: number;
  /** Public id of the saved search that was exported. */
  search_id: string;
  format: string;
  /** JSON array of the exported field names. */
  fields: string;
  /** Rows handed to the response so far; final once status leaves `running`. */
  row_count: Generated<number>;
  /** `limited`: stopped at the account's monthly row quota (see modules/auth/quotas.service.ts). */
  status: 'running' | 'done' | 'aborted' | 'failed' | 'limited';
  created_at: string;
  finished_at: string | null;
}

export interface LeadsTable {
  id: Generated<number>;
  account_id: number;
  place_id: number;
  /** Public id of the search of the latest export that included the place. */
  search_id: string;
  /** The latest export that included the place. */
  export_id: number;
  first_exported_at: string;
  last_exported_at: string;
}

/** Quotas an administrator set for one account; null: the configured default. */
export interface AccountQuotasTable {
  account_id: number;
  requests_per_day: number | null;
  export_rows_per_month: number | null;
  concurrent_exports: number | null;
  /** Places an account may enrich a month (migration 0026). */
  enrich_places_per_month: number | null;
  match_rows_per_month: number | null;
  updated_at: string;
}

/** Rows an account's exports have written in a UTC calendar month (`2026-11`). */
export interface ExportRowUsageTable {
  account_id: number;
  month: string;
  row_count: Generated<number>;
}

/** An export job (`POST /api/v2/exports`): a file written in the background (migration 0019). */
export interface ExportJobsTable {
  id: Generated<number>;
  /** `job_` + random. */
  public_id: string;
  account_id: number;
  search_id: string;
  format: string;
  /** Comma-separated fields as asked; null: all. */
  fields: string | null;
  webhook_url: string | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  /** Why a job failed, for its owner. */
  failure: string | null;
  /** Times the job was started (more than one after a process died while running it). */
  attempts: Generated<number>;
  /** The `exports` row of the current attempt (its `row_count` is the progress). */
  export_id: number | null;
  row_count: Generated<number>;
  /** 1: stopped at the account's monthly row quota. */
  limited: Generated<number>;
  /** The file's name under the data directory, once written. */
  file_name: string | null;
  file_bytes: number | null;
  /** Content-Disposition of the download. */
  download_name: string | null;
  /** Rows the current attempt took from the month's quota (`charged_month`), given back if it is abandoned. */
  charged_rows: Generated<number>;
  charged_month: string | null;
  /** The process running the job, and until when its lease holds. */
  runner: string | null;
  lease_until: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  /** `whd_` + random; also the event's id. */
  public_id: string;
  account_id: number;
  /** What `job_id` is an id of (`WebhookJobKind`, migration 0029): no foreign key, as it points into one of several tables. */
  job_kind: Generated<string>;
  job_id: number;
  url: string;
  /** `<job kind>.succeeded` or `<job kind>.failed` (`export_job.succeeded`, `enrichment_job.failed`…). */
  event: string;
  /** The JSON body, fixed when the job ended (every attempt sends the same bytes). */
  body: string;
  status: 'pending' | 'succeeded' | 'failed' | 'refused';
  attempts: Generated<number>;
  next_attempt_at: string | null;
  lease_until: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempt: number;
  at: string;
  response_status: number | null;
  /** `succeeded`, `http_error`, `network_error`, `refused`. */
  outcome: string;
  error: string | null;
  duration_ms: number;
}

/** The secret an account's webhook deliveries are signed with (rotatable in the dashboard). */
export interface AccountWebhookSecretsTable {
  account_id: number;
  secret: string;
  created_at: string;
}

/** Server-wide secrets made on first use (`export_link_key`: download links' HMAC key, unless configured). */
export interface ServerSecretsTable {
  name: string;
  value: string;
  created_at: string;
}

/** Suppression entries of an account (migration 0018): `key` is the normalised form a place is matched by. */
export interface SuppressionsTable {
  id: Generated<number>;
  account_id: number;
  /** `phone` (E.164), `domain` (registrable domain), `email` (lower case), `place` (public id). */
  kind: string;
  key: string;
  /** The entry as the client sent it. */
  value: string;
  created_at: string;
}

/** Per account: entries per kind and a revision that moves with every change of the list. */
export interface SuppressionListsTable {
  account_id: number;
  revision: number;
  phone_count: number;
  domain_count: number;
  email_count: number;
  place_count: number;
  updated_at: string;
}

/** Entries of an upload in progress (moved into `suppressions` when the upload is complete). */
export interface SuppressionUploadsTable {
  upload_id: string;
  seq: number;
  account_id: number;
  kind: string;
  key: string;
  value: string;
  created_at: string;
}

/** An OpenStreetMap way that is a place or a member of a relation that is one (migration 0023). */
export interface OsmWaysTable {
  id: number;
  /** JSON array of the way's node ids, in order. */
  refs: string;
  /** JSON object of the way's tags when the way itself is a place; null for a relation's member way. */
  tags: string | null;
}

/** The location of a node that an `osm_ways` way uses. */
export interface OsmNodesTable {
  id: number;
  lat: number;
  lon: number;
}

/** Which `osm_ways` ways use a node. */
export interface OsmNodeWaysTable {
  node_id: number;
  way_id: number;
}
