/**
 * The labelled contact values of the trust calibration (bench/trust-calibration.ts, docs/trust.md), built from
 * real data in ../shared/data at run time (never copied).
 *
 * A value is judged against another source's value for the same business: right when the other gives the same
 * (the same E.164 number, the same registrable domain, the same address), wrong when it gives another. The pair
 * must be one business by evidence other than the value judged: a pair counts for phones only when the
 * conflation matcher matches it with both phones hidden, for websites only with both domains hidden (the
 * matcher's `phone` and `domain` rules would otherwise pick exactly the pairs whose values agree), told how many
 * records carry each phone and domain as an import is. Emails play no part in matching. The hand-judged pairs of test/fixtures/conflation pass the same test (the judges saw the
 * phones), and a pair they judged two businesses is never used.
 *
 * Values a site's own pages give are judged by the hand labels of the saved pages (`websites/`): a phone the
 * enrichment's extractor finds is right when the annotators marked it a telephone of the business (TEL), an
 * address the same extractor finds is right when our judgement of the page says it is the business's.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import KDBush from 'kdbush';
import { registrableDomain } from '../../src/infra/web-domain.ts';
import { type MatchContext, matchPlaces } from '../../src/modules/conflation/matcher.ts';
import { emailFacts, phoneFacts } from '../../src/modules/contacts/evidence.ts';
import { emailFeatures, phoneFeatures, type ValueKind, websiteFeatures } from '../../src/modules/contacts/trust-model.ts';
import { extractContacts } from '../../src/modules/enrichment/extract/extract.ts';
import { normalisePhone } from '../../src/modules/geo/phone.ts';
import type { PlaceRecord } from '../../src/modules/places/place-record.ts';
import { readSampleSource, sampleFiles } from '../../test/helpers/conflation-sample.ts';
import { loadLabelledSet, sha256, telLabelNumbers } from '../../test/helpers/contacts-labelled-set.ts';

export interface Labelled {
  kind: ValueKind;
  features: Record<string, number>;
  correct: boolean;
  /** The third of the businesses the value belongs to (0, 1 or 2), set once every label is known (`splitByBusiness`). */
  fold: number;
  /** Fold 0: the held-out part. */
  heldOut: boolean;
  origin: string;
  /** The records (`source:id`) or site (`site:…`) the judgement rests on: one business, kept on one side of the split. */
  business: string[];
}

const recordKey = (r: PlaceRecord) => `${r.source.split(':')[0]}:${r.source_id}`;

function emailEvidence(address: string, website: string | null, source: string) {
  const facts = emailFacts(address, website);
  return {
    value: address,
    status: facts.syntax ? ('unknown' as const) : ('invalid' as const),
    role: facts.role,
    disposable: facts.disposable,
    free_provider: facts.free_provider,
    own_domain: facts.own_domain,
    sources: [source],
  };
}

/** `x`'s value of `kind` judged by `y`'s, as if `x`'s source alone gave it; null when either lacks one. */
function labelOf(kind: ValueKind, x: PlaceRecord, y: PlaceRecord, origin: string): Labelled | null {
  const base = { fold: 0, heldOut: false, origin, business: [recordKey(x), recordKey(y)] };
  const source = x.source.split(':')[0]!;
  if (kind === 'phone') {
    if (!x.phone || !y.phone_e164) return null;
    const facts = phoneFacts(x.phone_e164 ?? x.phone, x.country_code);
    const features = phoneFeatures({ valid: facts.valid, type: facts.type, sources: [source] }, x.country_code, facts.country);
    return { ...base, kind, features, correct: x.phone_e164 === y.phone_e164 };
  }
  if (kind === 'website') {
    if (!x.website || !y.website) return null;
    const theirs = registrableDomain(y.website);
    if (theirs === null) return null;
    const mine = registrableDomain(x.website);
    const features = websiteFeatures({ value: x.website, status: 'unknown', final_domain: null, sources: [source] });
    return { ...base, kind, features, correct: mine !== null && mine === theirs };
  }
  if (!x.email || !y.email) return null;
  const [mine, theirs] = [x.email.toLowerCase(), y.email.toLowerCase()];
  // Two mailboxes at one domain (`info@` and `sales@` of one firm, two webmail users) may both reach the business: no judgement.
  if (mine !== theirs && mine.split('@')[1] === theirs.split('@')[1]) return null;
  const features = emailFeatures(emailEvidence(x.email, x.website, source));
  return { ...base, kind, features, correct: mine === theirs };
}

/** A record with the value of `kind` hidden from the matcher. */
function blind(r: PlaceRecord, kind: ValueKind): PlaceRecord {
  if (kind === 'phone') return { ...r, phone_e164: null };
  if (kind === 'website') return { ...r, website_domain: null };
  return r;
}

/** Whether the matcher takes `a` and `b` for one business without the values of `kind`. */
const matchesBlind = (a: PlaceRecord, b: PlaceRecord, kind: ValueKind, context: MatchContext) =>
  matchPlaces(blind(a, kind), blind(b, kind), context).match;

/**
 * How many records of the files read carry each phone and each website domain, as an import's catalog tells the
 * matcher: a university's domain or a chain's switchboard is not the mark of one business (a department and its
 * university are not one place).
 */
function sharedKeys(records: Iterable<PlaceRecord>): MatchContext {
  const phones = new Map<string, number>();
  const domains = new Map<string, number>();
  for (const r of records) {
    if (r.phone_e164) phones.set(r.phone_e164, (phones.get(r.phone_e164) ?? 0) + 1);
    if (r.website_domain) domains.set(r.website_domain, (domains.get(r.website_domain) ?? 0) + 1);
  }
  return { placesWithPhone: (p) => phones.get(p) ?? 0, placesWithDomain: (d) => domains.get(d) ?? 0 };
}

type Pair = [PlaceRecord, PlaceRecord];
const pairKey = (a: PlaceRecord, b: PlaceRecord) => [recordKey(a), recordKey(b)].sort().join('|');

/**
 * For each record of `left`, the best match among the records of `right` within about 300 m, the values of
 * `kind` hidden. With `right` omitted, pairs within `left` (each unordered pair once).
 */
function matchedPairs(left: PlaceRecord[], right: PlaceRecord[] | null, kind: ValueKind, context: MatchContext): Pair[] {
  const others = (right ?? left).filter((r) => r.lat !== null && r.lon !== null);
  const hidden = others.map((r) => blind(r, kind));
  const position = new Map(others.map((r, i) => [r, i]));
  const index = new KDBush(Math.max(1, others.length));
  for (const r of others) index.add(r.lon!, r.lat!);
  index.finish();
  const out: Pair[] = [];
  for (const a of left) {
    if (a.lat === null || a.lon === null) continue;
    const self = right === null ? position.get(a)! : -1;
    const d = 0.003;
    const dLon = d / Math.cos((a.lat * Math.PI) / 180);
    const ha = blind(a, kind);
    let best: { b: PlaceRecord; score: number } | null = null;
    for (const i of index.range(a.lon - dLon, a.lat - d, a.lon + dLon, a.lat + d)) {
      if (right === null && i <= self) continue;
      const decision = matchPlaces(ha, hidden[i]!, context);
      if (decision.match && (best === null || decision.score > best.score)) best = { b: others[i]!, score: decision.score };
    }
    if (best) out.push([a, best.b]);
  }
  return out;
}

interface JudgedPairs {
  same: Pair[];
  /** Pair keys the judges said are two businesses. */
  different: Set<string>;
}

/** The hand-judged pairs of test/fixtures/conflation, their records read through the import's readers. */
async function judgedPairs(records: (source: string) => Promise<Map<string, PlaceRecord>>): Promise<JudgedPairs> {
  const rows = readFileSync(resolve(import.meta.dirname, '../../test/fixtures/conflation/judged-pairs.csv'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .slice(1)
    .map((l) => l.split(','));
  const same: Pair[] = [];
  const different = new Set<string>();
  for (const f of rows) {
    const a = (await records(f[0]!)).get(f[1]!);
    const b = (await records(f[2]!)).get(f[3]!);
    if (!a || !b) continue;
    if (f[4] === '1') same.push([a, b]);
    else different.add(pairKey(a, b));
  }
  return { same, different };
}

/** Overture's records with their provider (`overture:meta`, `overture:Microsoft`…) as the source, so that the matcher compares providers. */
function overtureByProvider(records: PlaceRecord[]): PlaceRecord[] {
  return records.map((r) => {
    const sources = (JSON.parse(r.attributes ?? '{}') as { sources?: Array<{ dataset?: string }> }).sources ?? [];
    const provider = sources.find((s) => s.dataset && s.dataset !== 'Overture')?.dataset ?? 'unknown';
    return { ...r, source: `overture:${provider}` };
  });
}

/** Sources compared by the matcher: `[left, right]`, right `null` for pairs within one file's providers. */
const comparisons: ReadonlyArray<readonly [string, string | null]> = [
  ['michelin', 'osm'],
  ['michelin', 'yelp'],
  ['michelin', 'gmaps'],
  ['foursquare', 'osm'],
  ['foursquare', 'yelp'],
  ['foursquare', 'overture'],
  ['foursquare', 'michelin'],
  ['overture', null],
];

export interface PairLabelCounts {
  /** Per origin: pairs the matcher made with a kind hidden, before the judged negatives and duplicates were removed. */
  pairs: Record<string, Record<ValueKind, number>>;
}

/** Every label two sources give, each pair judged for a kind only when it is one business without that kind's values. */
export async function pairLabels(): Promise<{ labels: Labelled[]; counts: PairLabelCounts }> {
  sampleFiles.foursquare = { file: 'places/fsq-os-places-sample-10k-2024-11-19.csv.gz', format: 'foursquare-csv' };
  const read = new Map<string, Map<string, PlaceRecord>>();
  for (const source of ['michelin', 'osm', 'yelp', 'gmaps', 'zomato', 'foursquare', 'overture'])
    read.set(source, await readSampleSource(source));
  const records = async (source: string) => read.get(source) ?? new Map<string, PlaceRecord>();
  const all = async (source: string) => {
    const list = [...(await records(source)).values()];
    return source === 'overture' ? overtureByProvider(list) : list;
  };
  const context = sharedKeys([...read.values()].flatMap((m) => [...m.values()]));
  const judged = await judgedPairs(records);
  const labels: Labelled[] = [];
  const counts: PairLabelCounts = { pairs: {} };
  for (const kind of ['phone', 'website', 'email'] as const) {
    const seen = new Set<string>();
    const take = (pairs: Pair[], origin: string) => {
      for (const [a, b] of pairs) {
        const key = pairKey(a, b);
        if (seen.has(key) || judged.different.has(key)) continue;
        seen.add(key);
        for (const label of [labelOf(kind, a, b, origin), labelOf(kind, b, a, origin)]) if (label) labels.push(label);
      }
    };
    take(
      judged.same.filter(([a, b]) => matchesBlind(a, b, kind, context)),
      'judged pairs',
    );
    for (const [left, right] of comparisons) {
      const origin = right === null ? `${left} providers (matcher)` : `${left} × ${right} (matcher)`;
      const pairs = matchedPairs(await all(left), right === null ? null : await all(right), kind, context);
      counts.pairs[origin] ??= { phone: 0, website: 0, email: 0 };
      counts.pairs[origin][kind] = pairs.length;
      take(pairs, origin);
    }
  }
  return { labels, counts };
}

/**
 * The phones and emails the enrichment's extractor finds on the saved pages, one label per site and value:
 * a phone is right when a page of the site marks it TEL, an address when our judgement of a page says it is
 * the business's.
 */
export function pageLabels(): Labelled[] {
  const bySite = new Map<string, ReturnType<typeof loadLabelledSet>>();
  for (const page of loadLabelledSet()) {
    if (!bySite.has(page.site)) bySite.set(page.site, []);
    bySite.get(page.site)!.push(page);
  }
  const out: Labelled[] = [];
  for (const [site, pages] of bySite) {
    const first = pages[0]!;
    const found = extractContacts(
      pages.map((p) => ({ url: p.url, html: p.html })),
      { countryCode: first.country, siteDomain: first.siteDomain },
    );
    const tel = new Set(pages.flatMap((p) => p.tel.flatMap((raw) => telLabelNumbers(raw, p.country, normalisePhone))));
    const business = [`site:${site}`];
    const origin = 'saved pages (extractor)';
    for (const phone of found.phones) {
      const facts = phoneFacts(phone.e164, first.country);
      const features = phoneFeatures({ valid: facts.valid, type: facts.type, sources: ['website'] }, first.country, facts.country);
      out.push({ kind: 'phone', features, correct: tel.has(phone.e164), fold: 0, heldOut: false, origin, business });
    }
    const theirs = new Set(pages.flatMap((p) => [...p.emailHashes]));
    for (const email of found.emails) {
      const address = email.address.toLowerCase();
      const features = emailFeatures(emailEvidence(address, `http://${first.siteDomain}/`, 'website'));
      out.push({ kind: 'email', features, correct: theirs.has(sha256(address)), fold: 0, heldOut: false, origin, business });
    }
  }
  return out;
}

const foldOf = (key: string) => Number.parseInt(createHash('sha256').update(key).digest('hex').slice(0, 8), 16) % 3;

/**
 * Splits the businesses in three folds and holds out fold 0: the records every label links (a record in two
 * pairs joins them) form one business, placed by a hash of its first key, so that no business is on both
 * sides. The saved pages keep the split of the contact-extraction bench (its held-out sites are fold 0 here:
 * the extractor was never tuned on them).
 */
export function splitByBusiness(labels: Labelled[]): void {
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let root = k;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(k, root);
    return root;
  };
  for (const l of labels) {
    for (const k of l.business) if (!parent.has(k)) parent.set(k, k);
    for (const k of l.business.slice(1)) {
      const [a, b] = [find(l.business[0]!), find(k)].sort() as [string, string];
      if (a !== b) parent.set(b, a);
    }
  }
  for (const l of labels) {
    const [first] = l.business as [string];
    l.fold = first.startsWith('site:') ? foldOf(first.slice('site:'.length)) : foldOf(find(first));
    l.heldOut = l.fold === 0;
  }
}
