import type { SocialNetwork } from './socials.ts';

/** What the email checks say of an address's domain (`enrichment/email-check.ts`). */
export type EmailVerdict = 'deliverable_domain' | 'no_mx' | 'unknown';

/**
 * A place's contacts in one shape, from two origins: its source's own lists (`places.source_contacts`,
 * written by the import) and what its website gave it (`places.found_contacts`, written by enrichment).
 * The public place shows both in `contacts`, each item with where it comes from; found values fill an
 * empty `email` or `phone` and never replace a source's.
 */

/** One item of the source's lists: the value and the source that gave it (a place of several sources keeps each). */
export interface SourceItem {
  value: string;
  source: string;
  /** Socials: the network of the profile URL in `value`. */
  network?: SocialNetwork;
}

/** `places.source_contacts`: empty lists are left out; null when all are empty. */
export interface StoredSourceContacts {
  emails?: SourceItem[];
  phones?: SourceItem[];
  socials?: SourceItem[];
}

/** `places.found_contacts` (and `enrich_sites.contacts`): what a site's pages gave, each item with its page and fetch time. */
export interface FoundContacts {
  /** The address the crawl started from. */
  site: string;
  emails: Array<{ address: string; page: string; fetched_at: string; own_domain: boolean; verdict: EmailVerdict }>;
  phones: Array<{ e164: string; page: string; fetched_at: string }>;
  socials: Array<{ network: SocialNetwork; url: string; page: string; fetched_at: string }>;
  contact_url: string | null;
}

/** What a place row says about its contacts (the columns `placeContacts` reads). */
export interface ContactColumns {
  source: string;
  email: string | null;
  phone: string | null;
  phone_e164: string | null;
  website: string | null;
  source_contacts: string | null;
  found_contacts: string | null;
  enrich_basis: string | null;
  country_code: string | null;
  /** What the trust pass judged (`StoredTrust`), null before it has seen the place. */
  contact_trust: string | null;
  /** The trust pass's score of the place, null before it has seen the place. */
  lead_score: number | null;
  first_seen_at: string;
  updated_at: string;
}
