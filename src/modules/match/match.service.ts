import type { Db } from '../../infra/db/database.ts';
import { cellsAround, cellsWithin, coarseCellM, streetKeys, streetKeyWords } from '../conflation/blocking.ts';
import { distanceM } from '../conflation/matcher.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import type { Search } from '../search/search.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import { type LegalForms, loadLegalForms } from './legal-forms.ts';
import {
  type CandidateRow,
  candidateRows,
  type ListPlace,
  listPlaceOf,
  listPlaceRows,
  placesByKey,
  publicRows,
} from './match.repository.ts';
import { defaultMatchThreshold, type MatchRecordInput, type MatchResult, type RecordProblem } from './match.schema.ts';
import { type PreparedRecord, prepareRecord } from './record.ts';
import { type PreparedPlace, preparePlace, type Scored, scoreCandidate } from './scoring.ts';

/**
 * What matching needs of the application: the database (blocking keys, candidate rows), the place-name
 * resolver of search (cities in any spelling, countries by code or name) and the legal forms. Built once per
 * process from the app's search object (`matchDepsOf(search)`); tests and benches build their own the same way.
 */
export interface MatchDeps {
  db: Db;
  places: () => PlaceNameResolver;
  legalForms: LegalForms;
  /** Candidates' compared forms, kept across calls: the places of a list's town come back row after row. */
  prepared: PreparedPlaces;
}

export function matchDepsOf(search: Pick<Search, 'db' | 'places'>): MatchDeps {
  const legalForms = loadLegalForms();
  return { db: search.db, places: search.places, legalForms, prepared: new PreparedPlaces(legalForms) };
}

/**
 * The compared forms of candidate places (names folded, legal forms off, street words), by place id, the most
 * recently used kept. A place whose name or address changed since is prepared again.
 */
export class PreparedPlaces {
  private readonly byId = new Map<number, PreparedPlace>();

  constructor(
    private readonly legalForms: LegalForms,
    private readonly capacity = 50_000,
  ) {}

  of(row: CandidateRow): PreparedPlace {
    const id = Number(row.id);
    const kept = this.byId.get(id);
    if (kept) this.byId.delete(id);
    const same =
      kept &&
      kept.row.name === row.name &&
      kept.row.names === row.names &&
      kept.row.country_code === row.country_code &&
      kept.row.street === row.street &&
      kept.row.housenumber === row.housenumber &&
      kept.row.address === row.address;
    const prepared = same ? { ...kept, row } : preparePlace(row, this.legalForms);
    this.byId.set(id, prepared);
    if (this.byId.size > this.capacity) this.byId.delete(this.byId.keys().next().value!);
    return prepared;
  }
}

export interface MatchOptions {
  /** 0–1; default `defaultMatchThreshold`. */
  threshold?: number;
}

/** The best candidate must beat the runner-up by this much to be the match: two close scores are a doubt, not an answer. */
export const runnerUpMargin = 0.04;
/** Candidates scored per record, those sharing the most keys with it first. */
const candidatesPerRecord = 40;
/** Candidates listed in a result. */
const candidatesShown = 5;
/** Name words of a record probed in its city's cells (its longest): enough to find the place, few keys. */
const cityWords = 2;

const PREFIX = 4;

/** The blocking keys a record looks up (conflation's keys: `blocking.ts`). */
function recordKeys(r: PreparedRecord): string[] {
  const words = new Set<string>();
  for (const f of r.forms) for (const t of f.tokens) words.add(t.slice(0, PREFIX));
  const keys: string[] = [];
  if (r.phone) keys.push(`p:${r.phone}`);
  if (r.domain) keys.push(`d:${r.domain}`);
  // Wherever the place is: an address is often all a record has besides its name (no city, or one the gazetteer spells otherwise).
  keys.push(...streetKeys(streetKeyWords(r.address), [...words]));
  if (r.point) {
    for (const cell of cellsAround(r.point.lat, r.point.lon)) for (const w of words) keys.push(`c:${cell}:${w}`);
  } else if (r.city) {
    const longest = [...new Set(r.forms.flatMap((f) => f.tokens))]
      .sort((a, b) => b.length - a.length)
      .slice(0, cityWords)
      .map((t) => t.slice(0, PREFIX));
    // The coarse grid: a city's area is at most 3×3 of its cells.
    const cells = cellsWithin(r.city.city.lat, r.city.city.lon, r.city.radiusM, coarseCellM);
    for (const cell of cells) for (const w of new Set(longest)) keys.push(`g:${cell}:${w}`);
  }
  return keys;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * Each record's place in the catalog, or none, in the order of `records`. A record's own problem (no name,
 * an unknown country, coordinates out of range) is its result's `error`; this rejects only when the
 * database fails. Candidates come from conflation's blocking keys (an indexed look-up per key, never a scan),
 * read for the whole batch at once.
 */
export async function matchRecords(
  deps: MatchDeps,
  records: readonly MatchRecordInput[],
  options: MatchOptions = {},
): Promise<MatchResult[]> {
  const decided = await decideRecords(deps, records, options);
  const matched = await publicRows(deps.db, matchedIds(decided));
  return records.map((input, i): MatchResult => {
    const d = decided[i]!;
    const row = d.isMatch && d.best ? matched.get(Number(d.best.place.row.id)) : undefined;
    return {
      ref: input.ref,
      match:
        row && d.best
          ? { place: placeRowToPlace(row), score: round3(d.best.score), evidence: d.best.evidence, placeRowId: Number(row.id) }
          : null,
      ...candidatesOf(d),
    };
  });
}

/** What a match job writes of a matched place (its appended columns): the public place's values, without the contacts' evidence. */
export interface ListMatch {
  placeRowId: number;
  score: number;
  place: ListPlace;
}

/** A record's result for a list: `MatchResult` with the matched place's job columns instead of the public place. */
export type ListMatchResult = Omit<MatchResult, 'match'> & { match: ListMatch | null };

/**
 * `matchRecords` for a match job: the same decisions, and of each match only what the job writes (`ListPlace`:
 * name, category, status, phone, email, website, socials, address), read in fewer columns and without judging
 * each contact's trust, which the public place does and the file does not show.
 */
export async function matchListRecords(
  deps: MatchDeps,
  records: readonly MatchRecordInput[],
  options: MatchOptions = {},
): Promise<ListMatchResult[]> {
  const decided = await decideRecords(deps, records, options);
  const matched = await listPlaceRows(deps.db, matchedIds(decided));
  return records.map((input, i): ListMatchResult => {
    const d = decided[i]!;
    const row = d.isMatch && d.best ? matched.get(Number(d.best.place.row.id)) : undefined;
    return {
      ref: input.ref,
      match: row && d.best ? { place: listPlaceOf(row), score: round3(d.best.score), placeRowId: Number(row.id) } : null,
      ...candidatesOf(d),
    };
  });
}

const matchedIds = (decided: readonly Decided[]): number[] =>
  decided.flatMap((d) => (d.best && d.isMatch ? [Number(d.best.place.row.id)] : []));

/** A result's candidates, or its record's problem. */
const candidatesOf = (d: Decided): Pick<MatchResult, 'candidates' | 'error'> =>
  d.problem
    ? { candidates: [], error: d.problem }
    : { candidates: d.scored.slice(0, candidatesShown).map((s) => ({ id: s.place.row.public_id, score: round3(s.score) })) };

/** Each record decided: its candidates from the blocking keys, scored, and whether the best is its match. */
async function decideRecords(deps: MatchDeps, records: readonly MatchRecordInput[], options: MatchOptions): Promise<Decided[]> {
  const threshold = options.threshold ?? defaultMatchThreshold;
  const names = deps.places();
  const prepared = records.map((r) => prepareRecord(r, names, deps.legalForms));
  const keysOf = prepared.map((p) => ('record' in p ? recordKeys(p.record) : []));
  const { byKey, points } = await placesByKey(deps.db, keysOf.flat());

  const candidateIds = keysOf.map((keys, i) => {
    const prep = prepared[i]!;
    const hits = new Map<number, number>();
    for (const k of keys) for (const id of byKey.get(k) ?? []) hits.set(id, (hits.get(id) ?? 0) + 1);
    // A record placed by its city: the places within the city's radius before those of the coarse cells around it.
    const city = 'record' in prep && !prep.record.point ? prep.record.city : null;
    const inCity = (id: number): number => {
      const p = city ? points.get(id) : undefined;
      return p && distanceM(city!.city.lat, city!.city.lon, p[0], p[1]) <= city!.radiusM ? 1 : 0;
    };
    return [...hits.entries()]
      .map(([id, n]) => ({ id, n, near: inCity(id) }))
      .sort((a, b) => b.n - a.n || b.near - a.near || a.id - b.id)
      .slice(0, candidatesPerRecord)
      .map((c) => c.id);
  });
  const rows = await candidateRows(deps.db, [...new Set(candidateIds.flat())]);
  const places = new Map<number, PreparedPlace>();
  const placeOf = (id: number): PreparedPlace | null => {
    let p = places.get(id);
    if (!p) {
      const row = rows.get(id);
      if (!row) return null;
      p = deps.prepared.of(row);
      places.set(id, p);
    }
    return p;
  };
  return records.map((_, i) => decide(prepared[i]!, candidateIds[i]!, placeOf, threshold));
}

interface Decided {
  problem?: RecordProblem;
  scored: Array<{ place: PreparedPlace } & Scored>;
  best?: { place: PreparedPlace } & Scored;
  isMatch: boolean;
}

/** A record's candidates scored, best first, and whether the best is its match. */
function decide(
  prep: ReturnType<typeof prepareRecord>,
  ids: readonly number[],
  placeOf: (id: number) => PreparedPlace | null,
  threshold: number,
): Decided {
  if ('problem' in prep) return { problem: prep.problem, scored: [], isMatch: false };
  const r = prep.record;
  const candidates = ids.flatMap((id) => {
    const place = placeOf(id);
    return place ? [place] : [];
  });
  const shared = {
    phone: r.phone !== null && candidates.filter((c) => c.row.phone_e164 === r.phone).length > 1,
    website: r.domain !== null && candidates.filter((c) => c.row.website_domain === r.domain).length > 1,
  };
  const scored = candidates.map((place) => ({ place, ...scoreCandidate(r, place, shared) }));
  scored.sort((a, b) => b.score - a.score || a.place.row.public_id.localeCompare(b.place.row.public_id));
  const best = scored[0];
  const second = scored[1];
  const isMatch = best !== undefined && best.score >= threshold && (second === undefined || best.score - second.score >= runnerUpMargin);
  return { scored, ...(best ? { best } : {}), isMatch };
}
