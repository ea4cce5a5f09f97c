import type { Migration } from 'kysely';
import * as m0001 from './0001_catalog.ts';
import * as m0002 from './0002_reference.ts';
import * as m0003 from './0003_accounts.ts';
import * as m0004 from './0004_searches.ts';
import * as m0005 from './0005_leads.ts';
import * as m0006 from './0006_search_order.ts';
import * as m0007 from './0007_places_version.ts';
import * as m0008 from './0008_search_country_order.ts';
import * as m0010 from './0010_places_deferred_indexing.ts';
import * as m0011 from './0011_postgres_fold_accents.ts';
import * as m0012 from './0012_category_name_kind.ts';
import * as m0013 from './0013_places_geo_band_index.ts';
import * as m0014 from './0014_drop_place_categories.ts';
import * as m0015 from './0015_account_quotas.ts';
import * as m0016 from './0016_search_text.ts';
import * as m0017 from './0017_triggers_without_marker.ts';
import * as m0018 from './0018_suppressions.ts';
import * as m0019 from './0019_export_jobs.ts';
import * as m0022 from './0022_place_freshness.ts';
import * as m0023 from './0023_osm_geometry.ts';
import * as m0024 from './0024_postgres_other_names_index.ts';
import * as m0025 from './0025_conflation.ts';
import * as m0026 from './0026_enrichment.ts';
import * as m0027 from './0027_stored_search_text.ts';
import * as m0028 from './0028_place_changes.ts';
import * as m0029 from './0029_webhook_job_kinds.ts';
import * as m0030 from './0030_follow_monitors.ts';
import * as m0031 from './0031_opening_hours.ts';
import * as m0034 from './0034_import_run_parts.ts';
import * as m0036 from './0036_match_jobs.ts';
import * as m0037 from './0037_contact_trust.ts';
import * as m0038 from './0038_match_street_keys.ts';

/** The migration chain, in order. Append new migrations here. */
export const migrations: Record<string, Migration> = {
  '0001_catalog': m0001,
  '0002_reference': m0002,
  '0003_accounts': m0003,
  '0004_searches': m0004,
  '0005_leads': m0005,
  '0006_search_order': m0006,
  '0007_places_version': m0007,
  '0008_search_country_order': m0008,
  '0010_places_deferred_indexing': m0010,
  '0011_postgres_fold_accents': m0011,
  '0012_category_name_kind': m0012,
  '0013_places_geo_band_index': m0013,
  '0014_drop_place_categories': m0014,
  '0015_account_quotas': m0015,
  '0016_search_text': m0016,
  '0017_triggers_without_marker': m0017,
  '0018_suppressions': m0018,
  '0019_export_jobs': m0019,
  '0022_place_freshness': m0022,
  '0023_osm_geometry': m0023,
  '0024_postgres_other_names_index': m0024,
  '0025_conflation': m0025,
  '0026_enrichment': m0026,
  '0027_stored_search_text': m0027,
  '0028_place_changes': m0028,
  '0029_webhook_job_kinds': m0029,
  '0030_follow_monitors': m0030,
  '0031_opening_hours': m0031,
  '0034_import_run_parts': m0034,
  '0036_match_jobs': m0036,
  '0037_contact_trust': m0037,
  '0038_match_street_keys': m0038,
};
