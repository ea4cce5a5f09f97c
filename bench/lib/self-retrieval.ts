/**
 * Self-retrieval: does search find every place the catalog holds, by its own name in its own city?
 *
 * For each named place the public API is asked, in process (`app.inject`, a real token), for its exact
 * name with its city (`/v1/search` {query, city} and `/api/v2/map/search?query=&city=`), and again with one
 * realistic typo in a word of 5+ letters. A place is found when it is in the first 10 results. Every miss
 * is classified by its cause (see `diagnose`), through the same public API.
 *
 * Shared by `bench/self-retrieval.ts` (every record of ../shared/data) and the CI-sized sample in
 * `test/search/self-retrieval.test.ts`.
 */
import { basename } from 'node:path';
import type { App } from '../../src/app.ts';
import type { Db } from '../../src/infra/db/database.ts';
import { foldText, jsonStrings } from '../../src/infra/text.ts';
import { queryWords } from '../../src/modules/search/resolve.ts';

/** Top results a place must be in to count as found. */
export const TOP = 10;

export interface NamedPlace {
  id: number;
  publicId: string;
  name: string;
  /** The city as the catalog displays it: the address city as written, else the assigned GeoNames city. */
  city: string | null;
  cityId: number | null;
  citySource: string | null;
  /** The file it came from, as a source label (`osm`, `yelp-fusion`, `michelin`…). */
  source: string;
  /** Places filed under the same city that have this name as one of theirs, this one included. */
  namesakes: number;
  /** Every name of the place, folded. */
  foldedNames: string[];
}

/** A source label from an imported file's name: the OSM extracts and the merged files are all `osm`. */
export function sourceLabel(path: string): string {
  const file = basename(path);
  if (file.endsWith('.osm.pbf') || file.startsWith('osm-')) return 'osm';
  const known: Array<[RegExp, string]> = [
    [/^yelp-fusion/, 'yelp-fusion'],
    [/^yelp-open/, 'yelp-open'],
    [/^gmaps-scraper-europe/, 'gmaps-europe'],
    [/^gmaps-scraper-plano/, 'gmaps-plano'],
    [/^zomato/, 'zomato'],
    [/^overture/, 'overture'],
    [/^michelin/, 'michelin'],
  ];
  return known.find(([re]) => re.test(file))?.[1] ?? file;
}

/** Every named place with the file it was first imported from, in id order. */
export async function namedPlaces(db: Db): Promise<NamedPlace[]> {
  const rows = await db.kysely
    .selectFrom('places')
    .leftJoin('import_runs', 'import_runs.id', 'places.import_run_id')
    .select([
      'places.id',
      'places.public_id',
      'places.name',
      'places.names',
      'places.city',
      'places.city_id',
      'places.city_source',
      'places.source',
      'import_runs.path',
    ])
    .where('places.name', '!=', '')
    // What search shows: closed and retired places are left out unless a search asks for them.
    .where('places.closed_at', 'is', null)
    .orderBy('places.id')
    .execute();
  // How many places of a city carry each name (display or other): a name carried by more than TOP places is a crowd.
  const carriers = new Map<string, number>();
  const key = (cityId: unknown, folded: string) => `${String(cityId)}|${folded}`;
  const folded = rows.map((r) => [...new Set([r.name, ...jsonStrings(r.names)].map(foldText))]);
  rows.forEach((r, i) => {
    for (const n of folded[i]!) carriers.set(key(r.city_id, n), (carriers.get(key(r.city_id, n)) ?? 0) + 1);
  });
  return rows.map((r, i) => ({
    id: Number(r.id),
    publicId: r.public_id,
    name: r.name,
    city: r.city,
    cityId: r.city_id === null ? null : Number(r.city_id),
    citySource: r.city_source,
    source: r.path ? sourceLabel(r.path) : r.source,
    namesakes: carriers.get(key(r.city_id, foldText(r.name))) ?? 1,
    foldedNames: folded[i]!,
  }));
}

const scripts: Array<[string, RegExp]> = [
  ['Latin', /\p{Script=Latin}/u],
  ['CJK', /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Arabic', /\p{Script=Arabic}/u],
  ['Hebrew', /\p{Script=Hebrew}/u],
  ['Thai', /\p{Script=Thai}/u],
  ['Devanagari', /\p{Script=Devanagari}/u],
];

/** The script most of a name's letters are written in (`none` for a name without letters). */
export function scriptOf(name: string): string {
  const counts = new Map<string, number>();
  for (const ch of name) {
    if (!/\p{L}/u.test(ch)) continue;
    const script = scripts.find(([, re]) => re.test(ch))?.[0] ?? 'other';
    counts.set(script, (counts.get(script) ?? 0) + 1);
  }
  let best = 'none';
  let most = 0;
  for (const [script, n] of counts) if (n > most) [best, most] = [script, n];
  return best;
}

/** A small deterministic PRNG (mulberry32) seeded from a string. */
function rng(seed: string): () => number {
  let h = 1779033703 ^ seed.length;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 3432918353);
  let a = (h = Math.imul(h ^ (h >>> 16), 2246822507)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Typo {
  query: string;
  /** The word as written and as misspelt. */
  word: string;
  typo: string;
  kind: 'drop' | 'double' | 'swap';
}

/**
 * One realistic typo in a word of 5+ letters (a letter dropped, doubled, or two neighbours swapped), the
 * same for the same place and seed; null when the name has no such word.
 */
export function typoOf(name: string, seed: string): Typo | null {
  const words = queryWords(name).filter((w) => [...w].length >= 5 && [...w].every((c) => /\p{L}|\p{M}/u.test(c)));
  if (words.length === 0) return null;
  const random = rng(seed);
  const word = words[Math.floor(random() * words.length)]!;
  const chars = [...word];
  const kinds = ['drop', 'double', 'swap'] as const;
  let kind: Typo['kind'] = kinds[Math.floor(random() * kinds.length)]!;
  const swappable = chars.flatMap((c, i) => (i + 1 < chars.length && chars[i + 1] !== c ? [i] : []));
  if (kind === 'swap' && swappable.length === 0) kind = 'drop';
  const out = [...chars];
  if (kind === 'swap') {
    const i = swappable[Math.floor(random() * swappable.length)]!;
    [out[i], out[i + 1]] = [out[i + 1]!, out[i]!];
  } else {
    const i = Math.floor(random() * chars.length);
    if (kind === 'drop') out.splice(i, 1);
    else out.splice(i, 0, chars[i]!);
  }
  const typo = out.join('');
  // Replace the first whole occurrence of the word (its boundaries are what queryWords split on).
  const at = name.search(
    new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}\\p{M}])`, 'u'),
  );
  const query = at < 0 ? name.replace(word, typo) : name.slice(0, at) + typo + name.slice(at + word.length);
  return { query, word, typo, kind };
}

export type Endpoint = 'v1' | 'map';
export const endpoints: Endpoint[] = ['v1', 'map'];

interface Answer {
  status: number;
  /** The fields a 400 names (`body.city`, `querystring.city`). */
  badFields: string[];
  ids: string[];
  /** Names of the places listed, in order. */
  names: string[];
  total: number;
  cityId: number | null;
  next: string | null;
}

/** One search through the public API, as a client sends it. */
export async function ask(
  app: App,
  authorization: string,
  endpoint: Endpoint,
  query: string,
  city: string,
  perPage = TOP,
  retries = 3,
): Promise<Answer> {
  const res =
    endpoint === 'v1'
      ? await app.inject({ method: 'POST', url: '/v1/search', headers: { authorization }, payload: { query, city, per_page: perPage } })
      : await app.inject({
          method: 'GET',
          url: `/api/v2/map/search?${new URLSearchParams({ query, city, per_page: String(perPage), fields: 'id,name' })}`,
          headers: { authorization },
        });
  // A 503 (a read shed, or what the search needs still being prepared) says when to come back: a client does.
  if (res.statusCode === 503 && retries > 0) {
    await new Promise((r) => setTimeout(r, Math.min(Number(res.headers['retry-after'] ?? 1), 2) * 1000));
    return ask(app, authorization, endpoint, query, city, perPage, retries - 1);
  }
  if (res.statusCode !== 200) {
    const problem = res.json() as { errors?: Array<{ field: string }> };
    return {
      status: res.statusCode,
      badFields: (problem.errors ?? []).map((e) => e.field),
      ids: [],
      names: [],
      total: 0,
      cityId: null,
      next: null,
    };
  }
  const body = res.json() as {
    total: number;
    data: Array<{ id: string; name: string }>;
    resolved: { city: { chosen: { id: number } } | null };
    links?: { next: string | null };
  };
  return {
    status: 200,
    badFields: [],
    ids: body.data.map((p) => p.id),
    names: body.data.map((p) => p.name),
    total: body.total,
    cityId: body.resolved.city?.chosen.id ?? null,
    next: body.links?.next ?? null,
  };
}

/** Whether a saved search lists the place anywhere (following `links.next`, at most `maxPages` of 100). */
async function anywhere(app: App, authorization: string, query: string, city: string, publicId: string, maxPages = 20): Promise<boolean> {
  let answer = await ask(app, authorization, 'map', query, city, 100);
  for (let page = 1; ; page++) {
    if (answer.ids.includes(publicId)) return true;
    if (!answer.next || page >= maxPages) return false;
    const res = await app.inject({ method: 'GET', url: answer.next, headers: { authorization } });
    if (res.statusCode !== 200) return false;
    const body = res.json() as { data: Array<{ id: string }>; links: { next: string | null } };
    answer = { ...answer, ids: body.data.map((p) => p.id), next: body.links.next };
  }
}

/** Scripts written without spaces between words, where one "word" of a query is a whole phrase. */
const unspaced = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]/u;

/** Folding that Unicode decomposition alone gives (what `remove_diacritics` and `unaccent` know at best). */
const decomposed = (w: string) =>
  w
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

/** Why a word of the name did not match: the word's own property that search handles badly. */
function wordReason(word: string): string {
  if ([...word].length < 3) return 'short word (under 3 letters)';
  if (unspaced.test(word)) return 'tokenisation (script without spaces)';
  if (
    foldText(word) !==
    decomposed(word)
      .replace(/[^\p{L}\p{N}]+/gu, ' ')
      .trim()
  )
    return 'word folding (letter outside decomposition)';
  if (/[^\p{L}\p{N}]/u.test(word)) return 'tokenisation (punctuation inside a word)';
  return 'word not matched (other)';
}

export interface Miss {
  place: NamedPlace;
  endpoint: Endpoint;
  variant: 'exact' | 'typo';
  query: string;
  reason: string;
  resolvedCityId: number | null;
  total: number;
}

/**
 * Why a place was not in the top 10 of its own search, asked through the API: the city (not resolved, or
 * to another city than the one the place is filed under), then the result set (the place is there but
 * ranked lower), then the words (which word of the name fails alone, and what kind of word it is).
 */
export async function diagnose(
  app: App,
  authorization: string,
  place: NamedPlace,
  query: string,
  answer: Answer,
  variant: 'exact' | 'typo',
  exactFound: boolean,
  sameNamedCities: (city: string) => number[],
): Promise<string> {
  const city = place.city!;
  if (answer.status === 400 && answer.badFields.some((f) => f.endsWith('.city'))) return 'city not resolved';
  if (answer.status !== 200) return `error ${answer.status}`;
  if (place.cityId === null) return 'place filed under no city';
  if (answer.cityId !== place.cityId) {
    return sameNamedCities(city).includes(place.cityId) ? 'city resolved to another city of that name' : 'place filed under another city';
  }
  if (variant === 'typo' && exactFound) {
    if (answer.total > 0 && (await anywhere(app, authorization, query, city, place.publicId))) return 'ranking beyond top 10 (typo)';
    return answer.total > 0 ? 'typo not tolerated (other places match the misspelling)' : 'typo not tolerated';
  }
  if (answer.total > 0 && (await anywhere(app, authorization, query, city, place.publicId))) return 'ranking beyond top 10';
  for (const word of queryWords(query)) {
    if (!(await anywhere(app, authorization, word, city, place.publicId, 50))) return wordReason(word);
  }
  return 'words match alone, not together';
}

/**
 * How a place fared on one endpoint: in the top 10; missed; or `crowd`: not in the top 10 while more than 10
 * places of its city carry that very name (chains: 57 FamilyMart in Tokyo, 55 Domino's Pizza in New Delhi)
 * and the top 10 are such places: nothing in a name and a city tells them apart, so the place counts neither way.
 */
export type Result = 'found' | 'missed' | 'crowd';

/** Whether the place is lost in a crowd of its namesakes: more than 10 in its city, and the first 10 answers all of that name. */
function inCrowd(answer: Answer, place: NamedPlace, byPublicId: ReadonlyMap<string, NamedPlace>): boolean {
  const name = foldText(place.name);
  return place.namesakes > TOP && answer.ids.length >= TOP && answer.ids.every((id) => byPublicId.get(id)?.foldedNames.includes(name));
}

export interface Outcome {
  place: NamedPlace;
  script: string;
  exact: Record<Endpoint, Result>;
  typo: (Typo & { found: Record<Endpoint, Result> }) | null;
}

/** Runs `fn` over `items` with at most `limit` in flight, results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export interface RunOptions {
  app: App;
  authorization: string;
  /** Seed of the typos. */
  seed: string;
  /** Requests in flight. */
  concurrency?: number;
  sameNamedCities: (city: string) => number[];
  /** Every named place of the catalog, when `places` is a sample: who the answers are. */
  catalog?: readonly NamedPlace[];
  progress?: (done: number, total: number) => void;
}

export interface RunResult {
  outcomes: Outcome[];
  misses: Miss[];
  /** Named places without any city: the question "found in its city" does not apply to them. */
  withoutCity: NamedPlace[];
  /** Places whose name has no letter or digit (`..`): there is nothing to search for. */
  withoutWords: NamedPlace[];
}

/** Asks every place's own search (exact and one typo) on both endpoints and diagnoses every miss. */
export async function runSelfRetrieval(places: readonly NamedPlace[], options: RunOptions): Promise<RunResult> {
  const { app, authorization } = options;
  const withoutWords = places.filter((p) => queryWords(p.name).every((w) => foldText(w) === ''));
  const withoutCity = places.filter((p) => !withoutWords.includes(p) && (p.city === null || p.city.trim() === ''));
  const asked = places.filter((p) => !withoutWords.includes(p) && !withoutCity.includes(p));
  const misses: Miss[] = [];
  const byPublicId = new Map((options.catalog ?? places).map((p) => [p.publicId, p]));
  let done = 0;
  const attempt = async (
    place: NamedPlace,
    endpoint: Endpoint,
    query: string,
    variant: 'exact' | 'typo',
    exactFound: boolean,
  ): Promise<Result> => {
    const answer = await ask(app, authorization, endpoint, query, place.city!);
    if (answer.ids.includes(place.publicId)) return 'found';
    if (inCrowd(answer, place, byPublicId)) return 'crowd';
    const reason = await diagnose(app, authorization, place, query, answer, variant, exactFound, options.sameNamedCities);
    misses.push({ place, endpoint, variant, query, reason, resolvedCityId: answer.cityId, total: answer.total });
    return 'missed';
  };
  const outcomes = await mapLimit(asked, options.concurrency ?? 8, async (place) => {
    const exact = {} as Record<Endpoint, Result>;
    for (const endpoint of endpoints) exact[endpoint] = await attempt(place, endpoint, place.name, 'exact', false);
    const t = typoOf(place.name, `${options.seed}:${place.publicId}`);
    let typo: Outcome['typo'] = null;
    if (t) {
      const found = {} as Record<Endpoint, Result>;
      for (const endpoint of endpoints) found[endpoint] = await attempt(place, endpoint, t.query, 'typo', exact[endpoint] !== 'missed');
      typo = { ...t, found };
    }
    options.progress?.(++done, asked.length);
    return { place, script: scriptOf(place.name), exact, typo };
  });
  return { outcomes, misses, withoutCity, withoutWords };
}

export interface Share {
  found: number;
  of: number;
  /** Left out of `of`: lost in a crowd of places of the same name in the city. */
  crowd: number;
}

export const share = (s: Share) => (s.of === 0 ? '—' : `${((100 * s.found) / s.of).toFixed(2)} %`);

export interface Tally {
  places: number;
  exact: Record<Endpoint, Share>;
  typo: Record<Endpoint, Share>;
}

const count = (share: Share, result: Result) => {
  if (result === 'crowd') share.crowd++;
  else share.of++;
  if (result === 'found') share.found++;
};

/** Found shares grouped by `key` (source, script…), with an `all` row. */
export function tally(outcomes: readonly Outcome[], key: (o: Outcome) => string): Map<string, Tally> {
  const out = new Map<string, Tally>();
  const blank = (): Share => ({ found: 0, of: 0, crowd: 0 });
  for (const o of outcomes) {
    for (const k of [key(o), 'all']) {
      const t = out.get(k) ?? { places: 0, exact: { v1: blank(), map: blank() }, typo: { v1: blank(), map: blank() } };
      out.set(k, t);
      t.places++;
      for (const e of endpoints) {
        count(t.exact[e], o.exact[e]);
        if (o.typo) count(t.typo[e], o.typo.found[e]);
      }
    }
  }
  return out;
}

/** Misses counted by reason, variant and endpoint, most frequent first. */
export function reasons(
  misses: readonly Miss[],
): Array<{ reason: string; exact: Record<Endpoint, number>; typo: Record<Endpoint, number> }> {
  const byReason = new Map<string, { exact: Record<Endpoint, number>; typo: Record<Endpoint, number> }>();
  for (const m of misses) {
    const r = byReason.get(m.reason) ?? { exact: { v1: 0, map: 0 }, typo: { v1: 0, map: 0 } };
    byReason.set(m.reason, r);
    r[m.variant][m.endpoint]++;
  }
  const total = (r: { exact: Record<Endpoint, number>; typo: Record<Endpoint, number> }) =>
    r.exact.v1 + r.exact.map + r.typo.v1 + r.typo.map;
  return [...byReason].map(([reason, r]) => ({ reason, ...r })).sort((a, b) => total(b) - total(a));
}
