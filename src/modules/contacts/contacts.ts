import { createRequire } from 'node:module';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { registrableDomain } from '../../infra/web-domain.ts';
import type { PhoneNormaliser } from '../geo/geo.types.ts';
import { canonicalSocial, type SocialNetwork } from './socials.ts';

/** A source's own contact lists (see `PlaceInput.contacts`). */
export interface SourceContacts {
  emails?: string[];
  phones?: string[];
  websites?: string[];
  socials?: string[];
}

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
              "A found address's domain check: `deliverable_domain` (it has an MX or A record), `no_mx`, `unknown` (DNS did not answer); null for a source's",
          }),
        ),
      }),
      { description: "Every email: the source's first, then the website's (its own domain first)" },
    ),
    phones: Type.Array(Type.Object({ e164: Type.String({ examples: ['+37797708080'] }), ...provenance })),
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

// A syntax check, not RFC 5322: a local part of common characters and a dotted host with a letter TLD.
const EMAIL = /^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/** An email address with its domain lower-cased, or null when its syntax is not that of an address. */
export function normaliseEmail(raw: string): string | null {
  const text = raw
    .trim()
    .replace(/^mailto:/i, '')
    .split('?')[0]!;
  const at = text.lastIndexOf('@');
  if (at <= 0) return null;
  const address = `${text.slice(0, at)}@${text.slice(at + 1).toLowerCase()}`;
  return EMAIL.test(address) ? address : null;
}

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

const webmail: ReadonlySet<string> = new Set(createRequire(import.meta.url)('email-providers/all.json') as string[]);

/** A site to enrich a place from: its queue key, and the address the crawl starts from. */
export interface SiteRef {
  key: string;
  url: string;
}

/**
 * The site of a place: its website (`https://www.example.com/fr/` → key `example.com/fr`), else the domain
 * of its email, unless that is a mail provider's (`gmail.com` is nobody's website). Null when it has
 * neither, or the website is no http(s) address of a named host.
 */
export function siteOf(website: string | null, email: string | null): SiteRef | null {
  if (website) {
    let text = website.trim().split(/[\s;,|]+/)[0] ?? '';
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `http://${text}`;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return null;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !registrableDomain(url.hostname)) return null;
    const host = url.hostname.replace(/\.$/, '').replace(/^www\./, '');
    const path = url.pathname.replace(/\/+$/, '');
    url.hash = '';
    return { key: `${host}${path}`, url: url.href };
  }
  const address = email ? normaliseEmail(email) : null;
  if (!address) return null;
  const domain = address.slice(address.indexOf('@') + 1);
  const registrable = registrableDomain(domain);
  if (!registrable || webmail.has(domain) || webmail.has(registrable)) return null;
  return { key: domain.replace(/^www\./, ''), url: `https://${domain}/` };
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
 * first (its `email`, `phone`, then its lists), then what its website gave that is not already there.
 */
export function placeContacts(row: ContactColumns): {
  contacts: Contacts;
  email: string | null;
  phone: string | null;
  phone_e164: string | null;
  filled: Array<'email' | 'phone'>;
} {
  const stored = row.source_contacts === null ? {} : (JSON.parse(row.source_contacts) as StoredSourceContacts);
  const found = validFound(row);
  const fromSource = { page: null, fetched_at: null };
  const emails: Contacts['emails'] = [];
  const seenEmails = new Set<string>();
  const addEmail = (item: Contacts['emails'][number]) => {
    const key = item.address.toLowerCase();
    if (seenEmails.has(key)) return;
    seenEmails.add(key);
    emails.push(item);
  };
  if (row.email) addEmail({ address: row.email, source: row.source, ...fromSource, verdict: null });
  for (const e of stored.emails ?? []) addEmail({ address: e.value, source: e.source, ...fromSource, verdict: null });
  for (const e of found?.emails ?? [])
    addEmail({ address: e.address, source: 'website', page: e.page, fetched_at: e.fetched_at, verdict: e.verdict });

  const phones: Contacts['phones'] = [];
  const seenPhones = new Set<string>();
  const addPhone = (item: Contacts['phones'][number]) => {
    if (seenPhones.has(item.e164)) return;
    seenPhones.add(item.e164);
    phones.push(item);
  };
  if (row.phone_e164) addPhone({ e164: row.phone_e164, source: row.source, ...fromSource });
  for (const p of stored.phones ?? []) addPhone({ e164: p.value, source: p.source, ...fromSource });
  for (const p of found?.phones ?? []) addPhone({ e164: p.e164, source: 'website', page: p.page, fetched_at: p.fetched_at });

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
  let phone = row.phone;
  let phoneE164 = row.phone_e164;
  if (phone === null && found && found.phones.length > 0) {
    phone = phoneE164 = found.phones[0]!.e164;
    filled.push('phone');
  }
  return { contacts: { emails, phones, socials, contact_url: found?.contact_url ?? null }, email, phone, phone_e164: phoneE164, filled };
}
