import type { Db } from '../../infra/db/database.ts';
import { storedPlaceText, type StoredPlaceText } from '../places/place-text.ts';
import { blockingKeys, probeKeys } from './blocking.ts';
import {
  allMemberStates,
  candidatesById,
  candidatesUnderKeys,
  conflationTransaction,
  hasOtherSource,
  joinPlace,
  keyCounts,
  makePlaceOf,
  matchKeyStore,
  recordsUnderKeys,
  membersOf,
  mergedSourceId,
  pendingRecords,
  placeStates,
  writePlace,
  type Candidate,
  type Conn,
  type MatchKeyStore,
  type PendingRecord,
} from './conflation.repository.ts';
import { matchPlaces, type MatchContext, type MatchRecord } from './matcher.ts';
import { mergedColumns, mergedContentHash, mergeRecords } from './merge.ts';

/**
 * Conflation in the import (issue #18, items 2 and 4; README "In the import"). After the place writer has
 * committed, every record that is new or changed since it was last conflated (`place_match_due`) is indexed
 * under its blocking keys and, if it stands alone and is open, compared with the records that share a
 * key: the best match (by the matcher's score) of a source the place does not have yet takes it in.
 * Places whose records changed, came back or left are merged again. An import cut off in between leaves
 * records due, and the next import conflates them.
 */

/**
 * Records read per transaction, and how long a transaction may spend comparing them before it commits what
 * it has done (the rest stay due for the next one). A first import only writes keys, so its transactions
 * take the whole chunk (fewer commits); a second source compares every record, and its transactions stay
 * short, because the transaction holds SQLite's write lock (another process's writer waits for it).
 */
const CHUNK = 2000;
const MATCH_BUDGET_MS = 500;

export interface ConflationSummary {
  /** Records indexed (new or changed). */
  indexed: number;
  /** Records that joined a place of several sources. */
  merged: number;
  /** Places of several sources merged again (a record joined, changed, came back or left). */
  remerged: number;
}

/** Everything due for conflation (new and changed records), and the places they join or change. */
export async function conflate(db: Db, now = new Date().toISOString()): Promise<ConflationSummary> {
  const summary: ConflationSummary = { indexed: 0, merged: 0, remerged: 0 };
  const otherSources = new Map<string, boolean>();
  const keyStore = matchKeyStore(db);
  const text = storedPlaceText(db);
  let after = 0;
  for (;;) {
    const done = await conflationTransaction(db)(async (trx) => {
      const rows = await pendingRecords(trx, after, CHUNK);
      if (rows.length === 0) return true;
      after = await conflateChunk({ keyStore, text }, trx, rows, otherSources, now, summary);
      return false;
    });
    if (done) break;
  }
  return summary;
}

/** Conflates rows in order until done or out of time; returns the id of the last row it conflated. */
async function conflateChunk(
  { keyStore, text }: { keyStore: MatchKeyStore; text: StoredPlaceText },
  trx: Conn,
  rows: PendingRecord[],
  otherSources: Map<string, boolean>,
  now: string,
  summary: ConflationSummary,
): Promise<number> {
  const started = performance.now();
  const records = rows.filter((r) => r.sources === null);
  await keyStore.replaceKeys(
    trx,
    records.filter((r) => r.changed === 1).map((r) => r.id),
    records.flatMap((r) => blockingKeys(asMatchRecord(r)).map((key) => ({ key, place_id: r.id }))),
  );
  const dirty = new Set<number>();
  // Rows whose state this chunk changed (records that joined a place, records made places): a candidate
  // read ahead for a later record may be one of them, and that record reads its candidates again.
  const touched = new Set<number>();
  let ahead = new Map<number, Found>();
  let aheadUntil = 0;
  let readAhead = FIRST_READ_AHEAD / 2;
  let mergedBefore = summary.merged;
  let done = 0;
  for (const [index, r] of rows.entries()) {
    if (done > 0 && performance.now() - started > MATCH_BUDGET_MS) break;
    done++;
    // A place of several sources (nothing to index), or a record of this chunk that an earlier one joined
    // and that has become a place since (its record has a row of its own now).
    if (r.sources !== null || dirty.has(r.id)) continue;
    summary.indexed++;
    if (r.merged_into !== null) {
      // A record of a place changed: the place is merged again (it stays with its place).
      dirty.add(r.merged_into);
      continue;
    }
    if (r.closed_reason !== null || r.lat === null) continue;
    let other = otherSources.get(r.source);
    if (other === undefined) otherSources.set(r.source, (other = await hasOtherSource(trx, r.source)));
    if (!other) continue;
    if (index >= aheadUntil) {
      // A window that merged nothing doubles the next; one that merged starts small again: a merge costs
      // a dozen statements, so few records of a merging stretch fit in a transaction's time budget, and
      // candidates read ahead for records the transaction does not reach are read for nothing.
      readAhead = mergedBefore === summary.merged ? Math.min(readAhead * 2, READ_AHEAD) : FIRST_READ_AHEAD;
      mergedBefore = summary.merged;
      const window = rows
        .slice(index, index + readAhead)
        .filter((w) => w.sources === null && w.merged_into === null && w.closed_reason === null && w.lat !== null);
      ahead = await readCandidates(trx, window);
      aheadUntil = index + readAhead;
    }
    const placeId = await matchInto(trx, r, now, text, ahead.get(r.id), touched);
    if (placeId !== undefined) {
      dirty.add(placeId);
      touched.add(placeId).add(r.id);
      summary.merged++;
    }
  }
  // Rows left for lack of time keep their keys (written again, unchanged, by the next transaction).
  const conflated = rows.slice(0, done);
  await keyStore.markMatched(
    trx,
    conflated.map((r) => r.id),
  );
  for (const placeId of dirty) await remerge(trx, placeId, now, text);
  summary.remerged += dirty.size;
  return conflated[conflated.length - 1]!.id;
}

function asMatchRecord(r: PendingRecord | Candidate): MatchRecord {
  return { ...r, categories: JSON.parse(r.categories) as string[] };
}

/**
 * Candidates as the matcher reads them, by record id and content hash: the matcher keeps a record's derived
 * forms (folded names, address) per object, and in a dense area the same records are candidates of many
 * records in turn. Emptied when it grows large.
 */
const preparedCandidates = new Map<number, { hash: string; record: MatchRecord }>();
const MAX_PREPARED = 50_000;

function candidateRecord(c: Candidate): MatchRecord {
  const known = preparedCandidates.get(c.id);
  if (known && known.hash === c.content_hash) return known.record;
  if (preparedCandidates.size >= MAX_PREPARED) preparedCandidates.clear();
  const record = asMatchRecord(c);
  preparedCandidates.set(c.id, { hash: c.content_hash, record });
  return record;
}

/**
 * Candidates compared per record: those that share its phone or website domain, and the nearest of the
 * others up to this many. A true match lies within a few hundred metres; in a dense centre a common name
 * word can bring hundreds of records, and comparing all of them is where the time would go.
 */
const MAX_NAME_CANDIDATES = 64;

function nearestCandidates(r: PendingRecord, candidates: Candidate[]): Candidate[] {
  if (candidates.length <= MAX_NAME_CANDIDATES) return candidates;
  const contact = (c: Candidate) =>
    (r.phone_e164 !== null && c.phone_e164 === r.phone_e164) || (r.website_domain !== null && c.website_domain === r.website_domain);
  const kept = candidates.filter(contact);
  const cos = Math.cos(((r.lat ?? 0) * Math.PI) / 180);
  const d2 = (c: Candidate) => (c.lat === null || c.lon === null ? Infinity : (c.lat - r.lat!) ** 2 + ((c.lon - r.lon!) * cos) ** 2);
  const others = candidates.filter((c) => !contact(c)).sort((a, b) => d2(a) - d2(b));
  return [...kept, ...others.slice(0, MAX_NAME_CANDIDATES)];
}

/**
 * Records whose candidates are read together, at most (the window adapts, see `conflateChunk`): three
 * statements for the window (keys, candidate rows, key counts) instead of three for each record, which on
 * PostgreSQL is where a record's time went (a round trip each).
 */
const READ_AHEAD = 256;
const FIRST_READ_AHEAD = 16;

/** A record's candidates (the records of other sources under its probe keys) and the counts of its phone and domain keys. */
interface Found {
  ids: number[];
  candidates: Candidate[];
  counts: Map<string, number>;
}

const contactKeys = (r: PendingRecord): string[] =>
  [r.phone_e164 ? `p:${r.phone_e164}` : '', r.website_domain ? `d:${r.website_domain}` : ''].filter((k) => k !== '');

/** The candidates of every record of `window`, by record id, read in one pass. */
async function readCandidates(trx: Conn, window: readonly PendingRecord[]): Promise<Map<number, Found>> {
  const out = new Map<number, Found>();
  if (window.length === 0) return out;
  const probes = new Map(window.map((r) => [r.id, probeKeys(asMatchRecord(r))]));
  const byKey = new Map<string, Array<{ id: number; source: string }>>();
  for (const row of await recordsUnderKeys(trx, [...new Set([...probes.values()].flat())])) {
    const list = byKey.get(row.key) ?? [];
    list.push(row);
    byKey.set(row.key, list);
  }
  const idsOf = new Map<number, number[]>();
  for (const r of window) {
    const ids = new Set<number>();
    for (const key of probes.get(r.id)!) for (const c of byKey.get(key) ?? []) if (c.source !== r.source) ids.add(c.id);
    idsOf.set(r.id, [...ids]);
  }
  const byId = new Map((await candidatesById(trx, [...new Set([...idsOf.values()].flat())])).map((c) => [c.id, c]));
  const counts = await keyCounts(trx, [...new Set(window.flatMap(contactKeys))]);
  for (const r of window) {
    const ids = idsOf.get(r.id)!;
    out.set(r.id, { ids, candidates: ids.flatMap((id) => byId.get(id) ?? []), counts });
  }
  return out;
}

/** A record's candidates read now, one record alone. */
async function readCandidatesOf(trx: Conn, r: PendingRecord, mine: MatchRecord): Promise<Found> {
  const ids = await candidatesUnderKeys(trx, probeKeys(mine), r.source);
  if (ids.length === 0) return { ids, candidates: [], counts: new Map() };
  return { ids, candidates: await candidatesById(trx, ids), counts: await keyCounts(trx, contactKeys(r)) };
}

/**
 * The place record `r` belongs to, if any: its best match among the records sharing a blocking key, whose
 * place (the record alone, or the place it is part of) has no record of `r`'s source yet. Joins it.
 * `ahead`: its candidates as read for its window, used unless one of them is among the rows `touched` since.
 */
async function matchInto(
  trx: Conn,
  r: PendingRecord,
  now: string,
  text: StoredPlaceText,
  ahead: Found | undefined,
  touched: ReadonlySet<number>,
): Promise<number | undefined> {
  const mine = asMatchRecord(r);
  const found = ahead && !ahead.ids.some((id) => touched.has(id)) ? ahead : await readCandidatesOf(trx, r, mine);
  if (found.ids.length === 0) return undefined;
  const candidates = nearestCandidates(
    r,
    found.candidates.filter((c) => c.sources === null),
  );
  if (candidates.length === 0) return undefined;
  const { counts } = found;
  const context: MatchContext = {
    placesWithPhone: (p) => counts.get(`p:${p}`) ?? 0,
    placesWithDomain: (d) => counts.get(`d:${d}`) ?? 0,
  };
  const decisions = candidates
    .map((c) => ({ c, d: matchPlaces(mine, candidateRecord(c), context) }))
    .filter((x) => x.d.match)
    .sort((a, b) => b.d.score - a.d.score || a.c.id - b.c.id);
  if (decisions.length === 0) return undefined;
  // The sources each candidate's place has already (a place keeps one record per source).
  const placeOf = (c: Candidate): number => c.merged_into ?? c.id;
  const members = await membersOf(trx, [...new Set(decisions.filter((x) => x.c.merged_into !== null).map((x) => placeOf(x.c)))]);
  for (const { c } of decisions) {
    const place = placeOf(c);
    const sources = c.merged_into === null ? [c.source] : (members.get(place) ?? []).map((m) => m.source);
    if (sources.includes(r.source)) continue;
    // A place the record's source has left entirely (every record retired) is not joined: it is gone.
    if (c.merged_into !== null && (members.get(place) ?? []).every((m) => m.closed_reason === 'retired')) continue;
    if (c.merged_into === null) await makePlaceOf(trx, place, now, text);
    await joinPlace(trx, r.id, place, now);
    return place;
  }
  return undefined;
}

/** What a place was merged from: its records' ids, content hashes and states. */
const mergeStateOf = (members: readonly { id: number; hash: string; reason: string | null }[]): string =>
  members.map((m) => `${m.id}:${m.hash}:${m.reason ?? ''}`).join(',');

/**
 * Merges place `placeId` again from its records that their sources still hold: its values, sources and
 * field sources; closed when every record says closed; retired (keeping its last values) when none is left.
 */
async function remerge(trx: Conn, placeId: number, now: string, text: StoredPlaceText): Promise<void> {
  const members = (await membersOf(trx, [placeId])).get(placeId) ?? [];
  const place = (await placeStates(trx, [placeId])).get(placeId);
  if (!place || members.length === 0) return;
  const state = mergeStateOf(members.map((m) => ({ id: m.id, hash: m.content_hash, reason: m.closed_reason })));
  const live = members.filter((m) => m.closed_reason !== 'retired');
  if (live.length === 0) {
    await writePlace(trx, placeId, { merge_state: state, closed_reason: 'retired', closed_at: place.closed_at ?? now });
    return;
  }
  const merged = mergeRecords(live);
  const hash = mergedContentHash(merged, place.public_id, mergedSourceId(place.public_id));
  const changed = hash !== place.content_hash;
  await writePlace(trx, placeId, {
    ...mergedColumns(merged),
    ...text.of(merged.values),
    content_hash: hash,
    sources: JSON.stringify(merged.sources),
    field_sources: JSON.stringify(merged.fieldSources),
    merge_state: state,
    ...(changed ? { updated_at: now } : {}),
    closed_reason: merged.closed ? 'closed' : null,
    closed_at: merged.closed ? (place.closed_reason === 'closed' ? place.closed_at : now) : null,
  });
}

/**
 * Merges again every place whose records' state differs from what it was merged from: a record changed by
 * an import, back from retirement, or retired by the completion of its dataset's run (`finishRun`). Reads
 * the records of places of several sources only, not the catalog.
 */
export async function remergeChanged(db: Db, now = new Date().toISOString()): Promise<number> {
  const states = await allMemberStates(db.kysely);
  if (states.size === 0) return 0;
  const places = await placeStates(db.kysely, [...states.keys()]);
  const stale = [...states].filter(([id, members]) => places.get(id)?.merge_state !== mergeStateOf(members)).map(([id]) => id);
  const text = storedPlaceText(db);
  for (let i = 0; i < stale.length; i += CHUNK) {
    await conflationTransaction(db)(async (trx) => {
      for (const id of stale.slice(i, i + CHUNK)) await remerge(trx, id, now, text);
    });
  }
  return stale.length;
}
