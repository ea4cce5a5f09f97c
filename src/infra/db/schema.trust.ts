/** The tables and columns of issue #33's trust in contacts (migration 0037; docs/trust.md), part of `schema.ts`. */

/**
 * On `places`, the trust pass's (`trust/`): `contact_trust`, JSON `StoredTrust` (`contacts/trust.types.ts`), what is
 * known of each email, phone and website; and the summary a search filters on: the status and confidence of the
 * place's best email (`valid_domain|no_mx|invalid|unknown`), best phone (its type) and website
 * (`live|redirected|parked|dead|unknown`), its `lead_score` (0–1) and the latest check behind them. Null until the
 * pass has seen the place, or when it has no value of the kind.
 */
export interface PlaceTrustColumns {
  contact_trust: string | null;
  email_status: string | null;
  email_confidence: number | null;
  phone_type: string | null;
  phone_confidence: number | null;
  website_status: string | null;
  website_confidence: number | null;
  lead_score: number | null;
  verified_at: string | null;
}

/** On `enrich_sites`, the enrichment's: the website's status after its last fetch. */
export interface SiteStatusColumns {
  /** `live|redirected|parked|dead|unknown` (`enrichment/site-status.ts`). */
  site_status: string | null;
  /** The registrable domain the home page ended on after redirects. */
  final_domain: string | null;
  /** When that status was established. */
  status_checked_at: string | null;
}

/** How far the trust pass has caught up: one row, id 1. */
export interface TrustStateTable {
  id: number;
  places_version: number;
  model_version: string;
  computed_at: string;
}

/** The last DNS verdict on an email domain (the enrichment's). */
export interface EmailDomainsTable {
  domain: string;
  status: 'valid_domain' | 'no_mx' | 'unknown';
  checked_at: string;
}

/** The tables of `Database` that are the trust's. */
export interface TrustTables {
  trust_state: TrustStateTable;
  email_domains: EmailDomainsTable;
}
