import type { Static } from '@sinclair/typebox';
import type { ContactColumns, FoundContacts, StoredSourceContacts } from './contacts.types.ts';
import { emailFacts, internationalPhone, phoneFacts } from './evidence.ts';
import { normaliseEmail, siteOf } from './normal-forms.ts';
import type { WebsiteItemSchema } from './trust.schema.ts';
import type { EmailStatus, EmailTrust, PhoneTrust, SeenValue, StoredTrust, WebsiteStatus, WebsiteTrust } from './trust.types.ts';
import { confidenceOf, emailFeatures, leadScoreOf, phoneFeatures, type TrustModel, trustModel, websiteFeatures } from './trust-model.ts';

/**
 * A place's contacts judged (docs/trust.md): every email, phone and website with its status, evidence, the
 * sources that carry it, when it was first and last seen, and the model's confidence; and the place's
 * summary (its best value of each kind, `lead_score`). Pure: the trust pass gives it the place's records and
 * the checks' results, the public place gives it what the row holds when the pass has not judged a value yet.
 */

/** One source's say: a record of the place (the place itself when it has one source). */
export type TrustVoice = Pick<ContactColumns, 'source' | 'email' | 'phone' | 'phone_e164' | 'website' | 'source_contacts'> & {
  /** When an import first saw the record. */
  first_seen_at: string | null;
  /** When an import last saw it (the last run that held it). */
  last_seen_at: string | null;
};

export interface TrustChecks {
  /** The last DNS verdict per email domain (lower-case). */
  emailDomains: ReadonlyMap<string, { status: string; checked_at: string }>;
  /** The status of the last fetch of the place's own website, when it was fetched. */
  site: { status: string | null; final_domain: string | null; checked_at: string | null } | null;
}

export interface TrustSubject {
  countryCode: string | null;
  /** The place's website (what own-domain compares with). */
  website: string | null;
  open: boolean;
  voices: TrustVoice[];
  /** What the place's website gave, when it still counts (`validFound`). */
  found: FoundContacts | null;
  /** What the pass stored last time: first sightings outlive a value's sources. */
  previous: StoredTrust | null;
}

export interface TrustSummary {
  email_status: EmailStatus | null;
  email_confidence: number | null;
  phone_type: string | null;
  phone_confidence: number | null;
  website_status: WebsiteStatus | null;
  website_confidence: number | null;
  lead_score: number;
  verified_at: string | null;
}

interface Gathered {
  value: string;
  sources: string[];
  first: string | null;
  last: string | null;
  asWritten: string | null;
  foundVerdict?: string | null;
}

const minIso = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a < b ? a : b);
const maxIso = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a > b ? a : b);

/** Collects values by key in first-seen order, each with every source that gives it. */
class Gatherer {
  readonly items = new Map<string, Gathered>();
  add(key: string, value: string, source: string, first: string | null, last: string | null, asWritten: string | null = null): Gathered {
    let item = this.items.get(key);
    if (!item) {
      item = { value, sources: [], first, last, asWritten };
      this.items.set(key, item);
    } else {
      item.first = minIso(item.first, first);
      item.last = maxIso(item.last, last);
      item.asWritten ??= asWritten;
    }
    if (!item.sources.includes(source)) item.sources.push(source);
    return item;
  }
}

/** The key an email is compared by: the address as `contacts` lists it, case aside. */
export const emailKey = (address: string) => (normaliseEmail(address) ?? address.trim()).toLowerCase();
/** The key a website is compared by: its site (`https://www.shop.de/` and `shop.de` are one), else its text. */
export const websiteKey = (website: string) => siteOf(website, null)?.key ?? website.trim().toLowerCase();

function gather(subject: TrustSubject) {
  const emails = new Gatherer();
  const phones = new Gatherer();
  const websites = new Gatherer();
  for (const v of subject.voices) {
    const stored = v.source_contacts === null ? {} : (JSON.parse(v.source_contacts) as StoredSourceContacts);
    if (v.email) {
      const address = normaliseEmail(v.email) ?? v.email.trim();
      emails.add(emailKey(address), address, v.source, v.first_seen_at, v.last_seen_at);
    }
    for (const e of stored.emails ?? []) emails.add(emailKey(e.value), e.value, e.source, v.first_seen_at, v.last_seen_at);
    if (v.phone_e164) phones.add(v.phone_e164, v.phone_e164, v.source, v.first_seen_at, v.last_seen_at, v.phone);
    else if (v.phone?.trim()) phones.add(v.phone.trim(), v.phone.trim(), v.source, v.first_seen_at, v.last_seen_at, v.phone);
    for (const p of stored.phones ?? []) phones.add(p.value, p.value, p.source, v.first_seen_at, v.last_seen_at);
    if (v.website?.trim()) websites.add(websiteKey(v.website), v.website.trim(), v.source, v.first_seen_at, v.last_seen_at);
  }
  for (const e of subject.found?.emails ?? []) {
    const item = emails.add(emailKey(e.address), e.address, 'website', e.fetched_at, e.fetched_at);
    item.foundVerdict ??= e.verdict;
  }
  for (const p of subject.found?.phones ?? []) phones.add(p.e164, p.e164, 'website', p.fetched_at, p.fetched_at);
  return { emails: [...emails.items.values()], phones: [...phones.items.values()], websites: [...websites.items.values()] };
}

/** The domains of every email of a place: what the judgement asks `email_domains` about. */
export function emailDomainsOf(subject: Pick<TrustSubject, 'voices' | 'found'>): string[] {
  const domains = new Set<string>();
  for (const item of gather({ ...subject, countryCode: null, website: null, open: true, previous: null }).emails) {
    const at = item.value.lastIndexOf('@');
    if (at > 0) domains.add(item.value.slice(at + 1).toLowerCase());
  }
  return [...domains];
}

function emailStatusOf(syntax: boolean, domain: string | null, item: Gathered, checks: TrustChecks) {
  if (!syntax || domain === null) return { status: 'invalid' as const, checked_at: null };
  const checked = checks.emailDomains.get(domain);
  if (checked && (checked.status === 'valid_domain' || checked.status === 'no_mx' || checked.status === 'unknown'))
    return { status: checked.status as EmailStatus, checked_at: checked.checked_at };
  if (item.foundVerdict === 'deliverable_domain') return { status: 'valid_domain' as const, checked_at: item.last };
  if (item.foundVerdict === 'no_mx') return { status: 'no_mx' as const, checked_at: item.last };
  return { status: 'unknown' as const, checked_at: null };
}

function websiteStatusOf(key: string, subject: TrustSubject, checks: TrustChecks) {
  const own = subject.website ? websiteKey(subject.website) : null;
  const site = checks.site;
  if (key !== own || !site?.status) return { status: 'unknown' as const, final_domain: null, checked_at: null };
  const status = (['live', 'redirected', 'parked', 'dead', 'unknown'] as const).find((s) => s === site.status) ?? 'unknown';
  return { status, final_domain: status === 'redirected' ? site.final_domain : null, checked_at: site.checked_at };
}

/** The first of the best: the item of highest confidence, the earlier on a tie. */
function best<T extends { confidence: number }>(items: T[]): T | null {
  let top: T | null = null;
  for (const item of items) if (top === null || item.confidence > top.confidence) top = item;
  return top;
}

/** Judges every contact value of a place, and sums the place up. */
export function judgeContacts(
  subject: TrustSubject,
  checks: TrustChecks,
  model: TrustModel,
): { trust: StoredTrust; summary: TrustSummary } {
  const gathered = gather(subject);
  const previous = subject.previous;
  const firstSeen = (list: Array<{ value: string; first_seen_at: string | null }> | undefined, value: string, first: string | null) =>
    minIso(list?.find((p) => p.value === value)?.first_seen_at ?? null, first);

  const emails: EmailTrust[] = gathered.emails.map((item) => {
    const facts = emailFacts(item.value, subject.website);
    const { status, checked_at } = emailStatusOf(facts.syntax, facts.domain, item, checks);
    const evidence = {
      value: item.value,
      status,
      role: facts.role,
      disposable: facts.disposable,
      free_provider: facts.free_provider,
      own_domain: facts.own_domain,
      sources: item.sources,
    };
    return {
      ...evidence,
      first_seen_at: firstSeen(previous?.emails, item.value, item.first),
      last_seen_at: item.last,
      checked_at,
      confidence: confidenceOf(model, 'email', emailFeatures(evidence)),
    };
  });
  const phones: PhoneTrust[] = gathered.phones.map((item) => {
    const facts = phoneFacts(item.value, subject.countryCode);
    const evidence = {
      value: item.value,
      valid: facts.valid,
      type: facts.type,
      international: facts.international,
      national: facts.national,
      as_written: item.asWritten,
      sources: item.sources,
    };
    return {
      ...evidence,
      first_seen_at: firstSeen(previous?.phones, item.value, item.first),
      last_seen_at: item.last,
      checked_at: null,
      confidence: confidenceOf(model, 'phone', phoneFeatures(evidence, subject.countryCode, facts.country)),
    };
  });
  const websites: WebsiteTrust[] = gathered.websites.map((item) => {
    const { status, final_domain, checked_at } = websiteStatusOf(websiteKey(item.value), subject, checks);
    const evidence = { value: item.value, status, final_domain, sources: item.sources };
    return {
      ...evidence,
      first_seen_at: firstSeen(previous?.websites, item.value, item.first),
      last_seen_at: item.last,
      checked_at,
      confidence: confidenceOf(model, 'website', websiteFeatures(evidence)),
    };
  });

  const bestEmail = best(emails);
  const bestPhone = best(phones);
  const bestWebsite = best(websites);
  let verified: string | null = null;
  for (const v of [...emails, ...websites]) verified = maxIso(verified, v.checked_at);
  return {
    trust: { model: model.version, emails, phones, websites },
    summary: {
      email_status: bestEmail?.status ?? null,
      email_confidence: bestEmail?.confidence ?? null,
      phone_type: bestPhone ? bestPhone.type : null,
      phone_confidence: bestPhone?.confidence ?? null,
      website_status: bestWebsite?.status ?? null,
      website_confidence: bestWebsite?.confidence ?? null,
      lead_score: leadScoreOf(
        [bestEmail?.confidence ?? null, bestPhone?.confidence ?? null, bestWebsite?.confidence ?? null],
        subject.open,
      ),
      verified_at: verified,
    },
  };
}

const seenFields = (v: SeenValue) => ({
  confidence: v.confidence,
  sources: v.sources,
  source_count: v.sources.length,
  first_seen_at: v.first_seen_at,
  last_seen_at: v.last_seen_at,
});

const noChecks: TrustChecks = { emailDomains: new Map(), site: null };

/**
 * The evidence of each value a place's `contacts` lists: what the trust pass stored, or, for a value it has
 * not judged yet (a place imported or enriched since), the judgement of the row alone (no DNS or HTTP check
 * but what enrichment found; first and last seen from the place's own dates).
 */
export function evidenceOf(row: ContactColumns, found: FoundContacts | null) {
  const stored = row.contact_trust === null ? null : (JSON.parse(row.contact_trust) as StoredTrust);
  let judged: { trust: StoredTrust; summary: TrustSummary } | null = null;
  const fromRow = () => {
    judged ??= judgeContacts(
      {
        countryCode: row.country_code,
        website: row.website,
        open: true,
        voices: [{ ...row, first_seen_at: row.first_seen_at, last_seen_at: row.updated_at }],
        found,
        previous: null,
      },
      noChecks,
      trustModel,
    );
    return judged;
  };
  const lookup = <T extends { value: string }>(list: (t: StoredTrust) => T[], key: (v: string) => string, value: string): T => {
    const k = key(value);
    const hit = stored ? list(stored).find((t) => key(t.value) === k) : undefined;
    return hit ?? list(fromRow().trust).find((t) => key(t.value) === k)!;
  };
  return {
    email(address: string) {
      const t = lookup((s) => s.emails, emailKey, address);
      return {
        status: t.status,
        checked_at: t.checked_at,
        role: t.role,
        disposable: t.disposable,
        free_provider: t.free_provider,
        own_domain: t.own_domain,
        ...seenFields(t),
      };
    },
    phone(value: string) {
      const t = lookup(
        (s) => s.phones,
        (v) => v,
        value,
      );
      const facts = phoneFacts(t.value, row.country_code);
      return {
        international: facts.international,
        national: facts.national,
        as_written: t.as_written,
        type: t.type,
        valid: t.valid,
        ...seenFields(t),
      };
    },
    websites(): Array<Static<typeof WebsiteItemSchema>> {
      const list = stored ? stored.websites : fromRow().trust.websites;
      return list.map((t) => ({
        url: t.value,
        source: t.sources[0] ?? 'unknown',
        status: t.status,
        final_domain: t.final_domain,
        checked_at: t.checked_at,
        ...seenFields(t),
      }));
    },
    /** The international form of a number the place lists (as judged), else libphonenumber's. */
    international(e164: string | null): string | null {
      if (e164 === null) return null;
      const hit = (stored ?? fromRow().trust).phones.find((p) => p.value === e164);
      return hit ? (hit.valid ? hit.international : null) : internationalPhone(e164);
    },
    /** The stored `lead_score`, else the row's own judgement. */
    leadScore(storedScore: number | null): number {
      return storedScore ?? fromRow().summary.lead_score;
    },
  };
}
