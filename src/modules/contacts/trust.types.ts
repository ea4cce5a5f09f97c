/**
 * What is known of each contact value of a place (issue #33; docs/trust.md): the stored shape of
 * `places.contact_trust` (JSON), written by the trust pass (`src/modules/trust/`) and read with the place.
 */

/** An email's status: its domain answered DNS for mail (MX, else A: RFC 5321's implicit MX), has neither, is no address, or could not be told. */
export const emailStatuses = ['valid_domain', 'no_mx', 'invalid', 'unknown'] as const;
export type EmailStatus = (typeof emailStatuses)[number];

/** A phone's type as libphonenumber knows it in the place's country (`unknown` for an invalid number or one its metadata cannot type). */
export const phoneTypes = ['mobile', 'fixed_line', 'toll_free', 'premium_rate', 'voip', 'unknown'] as const;
export type PhoneType = (typeof phoneTypes)[number];

/** A website's status after the crawler's last fetch of its home page. */
export const websiteStatuses = ['live', 'redirected', 'parked', 'dead', 'unknown'] as const;
export type WebsiteStatus = (typeof websiteStatuses)[number];

/** What every value carries: who gives it, since and until when, and the model's confidence in it. */
export interface SeenValue {
  /** The sources carrying the value (`osm`, `overture`, `foursquare`…, `website`), each once, in order of trust. */
  sources: string[];
  /** The earliest time a source was seen giving it (an import's first sight of the record, a page's fetch). */
  first_seen_at: string | null;
  /** The latest time a source was seen giving it (the last import run that held the record, the last fetch). */
  last_seen_at: string | null;
  /** When the status was last established by a check (DNS for an email's domain, HTTP for a website); null for phones. */
  checked_at: string | null;
  /** The model's probability that the value is right and reaches the business (0–1, `data/trust-model.json`). */
  confidence: number;
}

export interface EmailTrust extends SeenValue {
  /** The address, its domain lower-cased (as `contacts.emails[].address`). */
  value: string;
  status: EmailStatus;
  /** A role address (`info@`, `sales@`, `kontakt@`…) rather than a person's. */
  role: boolean;
  /** Its domain is a disposable-mail service's. */
  disposable: boolean;
  /** Its domain is a free mail provider's (`gmail.com`…). */
  free_provider: boolean;
  /** Its registrable domain is that of the place's website. */
  own_domain: boolean;
}

export interface PhoneTrust extends SeenValue {
  /** E.164 (as `contacts.phones[].e164`). */
  value: string;
  valid: boolean;
  type: PhoneType;
  /** Display forms by libphonenumber (kept so that a read shows them without parsing again); null for no number. */
  international: string | null;
  national: string | null;
  /** The value as its first source wrote it; null when no source's raw text is known (lists keep E.164 only). */
  as_written: string | null;
}

export interface WebsiteTrust extends SeenValue {
  /** The website as the place has it. */
  value: string;
  status: WebsiteStatus;
  /** `redirected`: the registrable domain the home page ended on. */
  final_domain: string | null;
}

/** `places.contact_trust`. */
export interface StoredTrust {
  /** The model version the confidences were computed with. */
  model: string;
  emails: EmailTrust[];
  phones: PhoneTrust[];
  websites: WebsiteTrust[];
}
