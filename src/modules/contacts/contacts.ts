import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { PhoneNormaliser } from '../geo/geo.types.ts';
import { internationalPhone } from './evidence.ts';
import { normaliseEmail } from './normal-forms.ts';
import { canonicalSocial, type SocialNetwork } from './socials.ts';
import { emailEvidence, phoneEvidence, WebsiteItemSchema } from './trust.schema.ts';
import { evidenceOf } from './trust.ts';
import type { StoredTrust } from './trust.types.ts';

export type { ContactColumns, EmailVerdict, FoundContacts, SourceItem, StoredSourceContacts } from './contacts.types.ts';
export { normaliseEmail, type SiteRef, siteOf } from './normal-forms.ts';

import type { ContactColumns, FoundContacts, StoredSourceContacts } from './contacts.types.ts';

/** A source's own contact lists (see `PlaceInput.contacts`). */
export interface SourceContacts {
  emails?: string[];
  phones?: string[];
  websites?: string[];
  socials?: string[];
}

const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const provenance = {
  source: Type.String({
    description: "Who gave the value: the source of the record (`osm`, `overture`…) or `website` (found on the place's own site)",
    examples: ['website'],
  }),
  page: nullable(Type.String({ description: 'The page it was found on (`website` only)' })),
  fetched_at: nullable(Type.String({ format: 'date-time', description: 'When that page was fetched (`website` only)' })),
};

export const ContactsSchema = Type.Object(
  {
    emails: Type.Array(
      Type.Object({
        address: Type.String({ examples: ['info@example.com'] }),
        ...provenance,
        verdict: nullable(
          Type.Union([Type.Literal('deliverable_domain'), Type.Literal('no_mx'), Type.Literal('unknown')], {
            description:
              "A found address's domain check when it was found: `deliverable_domain` (it has an MX or A record), `no_mx`, `unknown` (DNS did not answer); null for a source's. `status` is the current verdict for every address",
          }),
        ),
        ...emailEvidence,
      }),
      { description: "Every email: the source's first, then the website's (its own domain first)" },
    ),
    phones: Type.Array(
      Type.Object({
        e164: Type.Union([Type.String({ examples: ['+37797708080'] }), Type.Null()], {
          description: 'E.164; null for a number that is not valid (see `as_written`)',
        }),
        ...provenance,
        ...phoneEvidence,
      }),
    ),
    websites: Type.Array(WebsiteItemSchema, { description: "The place's websites, with the status of the last fetch" }),
    socials: Type.Array(
      Type.Object({
        network: Type.Unsafe<SocialNetwork>({ type: 'string', enum: ['facebook', 'instagram', 'linkedin', 'x', 'youtube', 'tiktok'] }),
        url: Type.String({ description: 'Canonical profile URL', examples: ['https://www.instagram.com/example'] }),
        ...provenance,
      }),
    ),
    contact_url: nullable(Type.String({ description: "The website's contact page, when it has one" })),
  },
  {
    description:
      "Every contact of the place with where each comes from (see the enrichment README): its sources' and what its own website gave",
  },
);
export type Contacts = Static<typeof ContactsSchema>;

/**
 * The source's contact lists in their stored form (JSON), or null when there is nothing: emails of valid
 * syntax (domain lower-cased), phones in E.164 in the place's country, socials as canonical profile URLs,
 * each once. Websites are not kept: the place's `website` is what enrichment crawls.
 */
export function normaliseSourceContacts(
  source: string,
  contacts: SourceContacts | undefined,
  first: { email: string | null; phone: string | null },
  countryCode: string | null,
  normalisePhone: PhoneNormaliser,
): string | null {
  const emails = new Set<string>();
  const phones = new Set<string>();
  const socials = new Map<string, SocialNetwork>();
  for (const raw of [first.email, ...(contacts?.emails ?? [])]) {
    const email = raw ? normaliseEmail(raw) : null;
    if (email) emails.add(email);
  }
  for (const raw of [first.phone, ...(contacts?.phones ?? [])]) {
    const e164 = raw ? normalisePhone(raw, countryCode) : null;
    if (e164) phones.add(e164);
  }
  for (const raw of contacts?.socials ?? []) {
    const social = canonicalSocial(raw);
    if (social) socials.set(social.url, social.network);
  }
  const out: StoredSourceContacts = {};
  const items = (set: Set<string>) => [...set].map((value) => ({ value, source }));
  // The first email and phone alone repeat the place's `email` and `phone`: kept all the same, so the
  // list is whole; a record without more than that spells nothing (its hash stays what it was).
  if (emails.size > 1 || phones.size > 1 || socials.size > 0) {
    if (emails.size > 0) out.emails = items(emails);
    if (phones.size > 0) out.phones = items(phones);
    if (socials.size > 0) out.socials = [...socials].map(([value, network]) => ({ value, source, network }));
  }
  return Object.keys(out).length > 0 ? JSON.stringify(out) : null;
}

/** The source contacts of a place of several sources: every record's lists (most trusted first), each value once. */
export function mergeSourceContacts(records: ReadonlyArray<string | null>): string | null {
  const out: Required<StoredSourceContacts> = { emails: [], phones: [], socials: [] };
  const seen = new Set<string>();
  for (const json of records) {
    if (json === null) continue;
    const stored = JSON.parse(json) as StoredSourceContacts;
    for (const list of ['emails', 'phones', 'socials'] as const) {
      for (const item of stored[list] ?? []) {
        const key = `${list}\0${item.value.toLowerCase()}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out[list].push(item);
      }
    }
  }
  const kept = Object.fromEntries(Object.entries(out).filter(([, items]) => items.length > 0));
  return Object.keys(kept).length > 0 ? JSON.stringify(kept) : null;
}

/**
 * Whether what enrichment found still belongs to the place: the website (or, without one, the email) it
 * was found from is still the place's. A re-import that changes it makes the found values disappear from
 * every view until the place is enriched again; nothing needs rewriting.
 */
export function foundStillValid(row: Pick<ContactColumns, 'enrich_basis' | 'website' | 'email'>): boolean {
  return row.enrich_basis !== null && row.enrich_basis === (row.website ?? row.email);
}

/** The found contacts of a row, or null when it has none that still count. */
export function validFound(row: Pick<ContactColumns, 'enrich_basis' | 'website' | 'email' | 'found_contacts'>): FoundContacts | null {
  return row.found_contacts !== null && foundStillValid(row) ? (JSON.parse(row.found_contacts) as FoundContacts) : null;
}

/**
 * The public `contacts` of a place, and the email and phone its public view shows: the source's values
 * first (its `email`, `phone`, then its lists), then what its website gave that is not already there; each
 * email, phone and website with its evidence and confidence (`trust.ts`: what the trust pass stored, or
 * judged from the row for a value the pass has not seen yet). `phone` is the international form of a valid
 * number (the raw text is `as_written` in `contacts.phones`).
 */
export function placeContacts(row: ContactColumns): {
  contacts: Contacts;
  email: string | null;
  phone: string | null;
  phone_e164: string | null;
  lead_score: number;
  filled: Array<'email' | 'phone'>;
} {
  const stored = row.source_contacts === null ? {} : (JSON.parse(row.source_contacts) as StoredSourceContacts);
  const found = validFound(row);
  const evidence = evidenceOf(row, found);
  const fromSource = { page: null, fetched_at: null };
  const emails: Contacts['emails'] = [];
  const seenEmails = new Set<string>();
  const addEmail = (item: Pick<Contacts['emails'][number], 'address' | 'source' | 'page' | 'fetched_at' | 'verdict'>) => {
    const key = item.address.toLowerCase();
    if (seenEmails.has(key)) return;
    seenEmails.add(key);
    emails.push({ ...item, ...evidence.email(item.address) });
  };
  if (row.email) addEmail({ address: row.email, source: row.source, ...fromSource, verdict: null });
  for (const e of stored.emails ?? []) addEmail({ address: e.value, source: e.source, ...fromSource, verdict: null });
  for (const e of found?.emails ?? [])
    addEmail({ address: e.address, source: 'website', page: e.page, fetched_at: e.fetched_at, verdict: e.verdict });

  const phones: Contacts['phones'] = [];
  const seenPhones = new Set<string>();
  const addPhone = (item: Pick<Contacts['phones'][number], 'e164' | 'source' | 'page' | 'fetched_at'>, raw: string) => {
    if (seenPhones.has(raw)) return;
    seenPhones.add(raw);
    phones.push({ ...item, ...evidence.phone(raw) });
  };
  if (row.phone_e164) addPhone({ e164: row.phone_e164, source: row.source, ...fromSource }, row.phone_e164);
  else if (row.phone?.trim()) addPhone({ e164: null, source: row.source, ...fromSource }, row.phone.trim());
  for (const p of stored.phones ?? []) addPhone({ e164: p.value, source: p.source, ...fromSource }, p.value);
  for (const p of found?.phones ?? []) addPhone({ e164: p.e164, source: 'website', page: p.page, fetched_at: p.fetched_at }, p.e164);

  const socials: Contacts['socials'] = [];
  const seenSocials = new Set<string>();
  for (const s of stored.socials ?? []) {
    if (seenSocials.has(s.value) || !s.network) continue;
    seenSocials.add(s.value);
    socials.push({ network: s.network, url: s.value, source: s.source, ...fromSource });
  }
  for (const s of found?.socials ?? []) {
    if (seenSocials.has(s.url)) continue;
    seenSocials.add(s.url);
    socials.push({ network: s.network, url: s.url, source: 'website', page: s.page, fetched_at: s.fetched_at });
  }

  const filled: Array<'email' | 'phone'> = [];
  let email = row.email;
  if (email === null && found && found.emails.length > 0) {
    email = found.emails[0]!.address;
    filled.push('email');
  }
  let phoneE164 = row.phone_e164;
  let phone = row.phone === null ? null : (evidence.international(phoneE164) ?? row.phone);
  if (phone === null && found && found.phones.length > 0) {
    phoneE164 = found.phones[0]!.e164;
    phone = evidence.international(phoneE164) ?? phoneE164;
    filled.push('phone');
  }
  return {
    contacts: { emails, phones, websites: evidence.websites(), socials, contact_url: found?.contact_url ?? null },
    email,
    phone,
    phone_e164: phoneE164,
    lead_score: evidence.leadScore(row.lead_score),
    filled,
  };
}

/**
 * The email, phone and social profile URLs the public view shows (`placeContacts`'s `email`, `phone` and
 * `contacts.socials[].url`, the same values in the same order), without each contact's evidence: no trust is
 * judged, a phone's international form is the trust pass's where it stored one, else libphonenumber's (which is
 * what a judgement from the row gives). For a match job's columns, where the evidence is not shown.
 */
export function placeContactValues(
  row: Pick<
    ContactColumns,
    'email' | 'phone' | 'phone_e164' | 'website' | 'source_contacts' | 'found_contacts' | 'enrich_basis' | 'contact_trust'
  >,
): { email: string | null; phone: string | null; socials: string[] } {
  const found = validFound(row);
  let trust: StoredTrust | null | undefined;
  const international = (e164: string | null): string | null => {
    if (e164 === null) return null;
    trust ??= row.contact_trust === null ? null : (JSON.parse(row.contact_trust) as StoredTrust);
    const hit = trust?.phones.find((p) => p.value === e164);
    return hit ? (hit.valid ? hit.international : null) : internationalPhone(e164);
  };
  const email = row.email ?? found?.emails[0]?.address ?? null;
  let phone = row.phone === null ? null : (international(row.phone_e164) ?? row.phone);
  if (phone === null && found && found.phones.length > 0) {
    const e164 = found.phones[0]!.e164;
    phone = international(e164) ?? e164;
  }
  const socials: string[] = [];
  const seen = new Set<string>();
  const stored = row.source_contacts === null ? {} : (JSON.parse(row.source_contacts) as StoredSourceContacts);
  for (const s of stored.socials ?? []) {
    if (seen.has(s.value) || !s.network) continue;
    seen.add(s.value);
    socials.push(s.value);
  }
  for (const s of found?.socials ?? []) {
    if (seen.has(s.url)) continue;
    seen.add(s.url);
    socials.push(s.url);
  }
  return { email, phone, socials };
}
