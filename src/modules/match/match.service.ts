import type { Db } from '../../infra/db/database.ts';
import { cellsAround, cellsWithin, streetKeys, streetKeyWords } from '../conflation/blocking.ts';
import { placeRowToPlace } from '../places/places.schema.ts';
import type { Search } from '../search/search.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import { type LegalForms, loadLegalForms } from './legal-forms.ts';
import { candidateRows, placesByKey } from './match.repository.ts';
import { defaultMatchThreshold, type MatchRecordInput, type MatchResult } from './match.schema.ts';
import { type PreparedRecord, prepareRecord } from './record.ts';
import { type PreparedPlace, preparePlace, scoreCandidate } from './scoring.ts';

/**
 * What matching needs of the application: the database (blocking keys, candidate rows), the place-name
 * resolver of search (cities in any spelling, countries by code or name) and the legal forms. Built once per
 * process from the app's search object (`matchDepsOf(search)`); tests and benches build their own the same way.
 */
export interface MatchDeps {
  db: Db;
  places: () => PlaceNameResolver;
  legalForms: LegalForms;
}

export function matchDepsOf(search: Pick<Search, 'db' | 'places'>): MatchDeps {
  return { db: search.db, places: search.places, legalForms: loadLegalForms() };
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
    const cells = cellsWithin(r.city.city.lat, r.city.city.lon, r.city.radiusM);
    for (const cell of cells) for (const w of new Set(longest)) keys.push(`c:${cell}:${w}`);
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
  const threshold = options.threshold ?? defaultMatchThreshold;
  const names = deps.places();
  const prepared = records.map((r) => prepareRecord(r, names, deps.legalForms));
  const keysOf = prepared.map((p) => ('record' in p ? recordKeys(p.record) : []));
  const byKey = await placesByKey(deps.db, keysOf.flat());

  const candidateIds = keysOf.map((keys) => {
    const hits = new Map<number, number>();
    for (const k of keys) for (const id of byKey.get(k) ?? []) hits.set(id, (hits.get(id) ?? 0) + 1);
    return [...hits.entries()]
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, candidatesPerRecord)
      .map(([id]) => id);
  });
  const rows = await candidateRows(deps.db, [...new Set(candidateIds.flat())]);
  const places = new Map<number, PreparedPlace>();
  const placeOf = (id: number): PreparedPlace | null => {
    let p = places.get(id);
    if (!p) {
      const row = rows.get(id);
      if (!row) return null;
      p = preparePlace(row, deps.legalForms);
      places.set(id, p);
    }
    return p;
  };

  return records.map((input, i): MatchResult => {
    const prep = prepared[i]!;
    if ('problem' in prep) return { ref: input.ref, match: null, candidates: [], error: prep.problem };
    const r = prep.record;
    const candidates = candidateIds[i]!.flatMap((id) => {
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
    return {
      ref: input.ref,
      match: isMatch
        ? {
            place: placeRowToPlace(best.place.row),
            score: round3(best.score),
            evidence: best.evidence,
            placeRowId: Number(best.place.row.id),
          }
        : null,
      candidates: scored.slice(0, candidatesShown).map((s) => ({ id: s.place.row.public_id, score: round3(s.score) })),
    };
  });
}
