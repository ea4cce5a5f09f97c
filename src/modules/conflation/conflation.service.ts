import type { Db } from '../../infra/db/database.ts';
import { type StoredPlaceText, storedPlaceText } from '../places/place-text.ts';
import { blockingKeys, probeKeys } from './blocking.ts';
import {
  allMemberStates,
  type Candidate,
  type ConflationWriter,
  type Conn,
  candidatesById,
  conflationTransaction,
  conflationWriter,
  hasOtherSource,
  keyCounts,
  memberSourcesOf,
  membersOf,
  mergedSourceId,
  moveLeadsToPlaces,
  type PendingRecord,
  type PlaceWrite,
  pendingRecords,
  placeStates,
  recordsUnderKeys,
  writePlace,
} from './conflation.repository.ts';
import { type MatchContext, type MatchRecord, matchPlaces } from './matcher.ts';
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
  const writer = conflationWriter(db);
  const text = storedPlaceText(db);
  let after = 0;
  for (;;) {
    const done = await conflationTransaction(db)(async (trx) => {
      const rows = await pendingRecords(trx, after, CHUNK);
      if (rows.length === 0) return true;
      after = await conflateChunk({ writer, text }, trx, rows, otherSources, now, summary);
      return false;
    });
    if (done) break;
  }
  return summary;
}

/** Conflates rows in order until done or out of time; returns the id of the last row it conflated. */
async function conflateChunk(
  { writer, text }: { writer: ConflationWriter; text: StoredPlaceText },
  trx: Conn,
  rows: PendingRecord[],
  otherSources: Map<string, boolean>,
  now: string,
  summary: ConflationSummary,
): Promise<number> {
  const started = performance.now();
  const records = rows.filter((r) => r.sources === null);
  await writer.replaceKeys(
    trx,
    records.filter((r) => r.changed === 1).map((r) => r.id),
    records.flatMap((r) => blockingKeys(asMatchRecord(r)).map((key) => ({ key, place_id: r.id }))),
  );
  const dirty = new Set<number>();
  let window = newWindow(new Map());
  let windowEnd = 0;
  let windowSize = FIRST_WINDOW / 2;
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
    if (index >= windowEnd) {
      // The merges decided for the window are made before the next window reads its candidates. A window
      // starts small, so that a transaction out of time early has not read ahead for nothing, and doubles.
      await applyMerges(writer, trx, window, now);
      windowSize = Math.min(windowSize * 2, WINDOW);
      windowEnd = index + windowSize;
      window = await readWindow(
        trx,
        rows
          .slice(index, windowEnd)
          .filter((w) => w.sources === null && w.merged_into === null && w.closed_reason === null && w.lat !== null),
      );
    }
    const placeId = decideMerge(r, window);
    if (placeId !== undefined) {
      dirty.add(placeId);
      summary.merged++;
    }
  }
  await applyMerges(writer, trx, window, now);
  // Rows left for lack of time keep their keys (written again, unchanged, by the next transaction).
  const conflated = rows.slice(0, done);
  await writer.markMatched(
    trx,
    conflated.map((r) => r.id),
  );
  await remerge(writer, trx, [...dirty], now, text);
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
  // Each distance once, not twice a comparison: a dense centre's common word brings hundreds.
  const others = candidates
    .filter((c) => !contact(c))
    .map((c) => ({ c, d: d2(c) }))
    .sort((a, b) => a.d - b.d);
  return [...kept, ...others.slice(0, MAX_NAME_CANDIDATES).map((x) => x.c)];
}

/**
 * Records whose candidates are read together, and whose merges are decided together and then made together
 * (`applyMerges`), at most: three statements read the candidates of the window (keys, candidate rows, key
 * counts; a fourth the members of the places among them), and a handful make its merges, instead of three
 * reads and a dozen writes a record, which on PostgreSQL were a round trip each.
 */
const WINDOW = 256;
const FIRST_WINDOW = 16;

/** A record's candidates (the records of other sources under its probe keys) and the counts of its phone and domain keys. */
interface Found {
  candidates: Candidate[];
  counts: Map<string, number>;
}

/**
 * The candidates of the records of a window, read once, and the merges decided for it since, not made yet.
 * A merge changes what the window's later records see: a candidate made a place becomes the place (no
 * longer a candidate), and its record a new row, under the same keys, with the place as `merged_into`; a
 * record that joined a place is part of it. Each later record sees its candidates through these changes
 * (`seen`), as it would read them again after each merge, one at a time.
 */
interface Window {
  found: Map<number, Found>;
  /** The records of the places among the candidates, then every join: a place keeps one record per source. */
  members: Map<number, Array<{ source: string; closed_reason: string | null }>>;
  /** Merges in the order decided: record `id` joins place `placeId`, which `made` from a lone record. */
  merges: Array<{ id: number; placeId: number; made: boolean }>;
  /** Candidates made places: their record's new row as a candidate (an id after every stored row's, in order). */
  copies: Map<number, Candidate>;
  /** Records that joined a place, and the place. */
  joined: Map<number, number>;
}

const newWindow = (
  found: Map<number, Found>,
  members = new Map<number, Array<{ source: string; closed_reason: string | null }>>(),
): Window => ({
  found,
  members,
  merges: [],
  copies: new Map(),
  joined: new Map(),
});

/** Ids of the new rows of a window's records made places, as candidates compare them: after every stored row. */
const UNSTORED_ID = 2 ** 52;

const contactKeys = (r: PendingRecord): string[] =>
  [r.phone_e164 ? `p:${r.phone_e164}` : '', r.website_domain ? `d:${r.website_domain}` : ''].filter((k) => k !== '');

/** The candidates of every record of `window`, by record id, and the members of their places, read in one pass. */
async function readWindow(trx: Conn, window: readonly PendingRecord[]): Promise<Window> {
  const out = new Map<number, Found>();
  if (window.length === 0) return newWindow(out);
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
  for (const r of window) out.set(r.id, { candidates: idsOf.get(r.id)!.flatMap((id) => byId.get(id) ?? []), counts });
  const places = [...new Set([...byId.values()].flatMap((c) => (c.merged_into === null ? [] : [c.merged_into])))];
  return newWindow(out, places.length > 0 ? await memberSourcesOf(trx, places) : undefined);
}

/** A candidate as the window's merges so far left it. */
function seen(c: Candidate, window: Window): Candidate {
  const copy = window.copies.get(c.id);
  if (copy) return copy;
  const place = window.joined.get(c.id);
  return place === undefined ? c : { ...c, merged_into: place, closed_reason: 'merged' };
}

/**
 * The place record `r` joins, if any: its best match among the records sharing a blocking key, whose place
 * (the record alone, or the place it is part of) has no record of `r`'s source yet. The merge is noted in
 * the window (made by `applyMerges`).
 */
function decideMerge(r: PendingRecord, window: Window): number | undefined {
  const found = window.found.get(r.id);
  if (!found || found.candidates.length === 0) return undefined;
  const candidates = nearestCandidates(
    r,
    found.candidates.map((c) => seen(c, window)).filter((c) => c.sources === null),
  );
  if (candidates.length === 0) return undefined;
  const mine = asMatchRecord(r);
  const { counts } = found;
  const context: MatchContext = {
    placesWithPhone: (p) => counts.get(`p:${p}`) ?? 0,
    placesWithDomain: (d) => counts.get(`d:${d}`) ?? 0,
  };
  const decisions = candidates
    .map((c) => ({ c, d: matchPlaces(mine, candidateRecord(c), context) }))
    .filter((x) => x.d.match)
    .sort((a, b) => b.d.score - a.d.score || a.c.id - b.c.id);
  for (const { c } of decisions) {
    // The sources each candidate's place has already (a place keeps one record per source).
    const place = c.merged_into ?? c.id;
    const members = c.merged_into === null ? [{ source: c.source, closed_reason: c.closed_reason }] : (window.members.get(place) ?? []);
    if (members.some((m) => m.source === r.source)) continue;
    // A place the record's source has left entirely (every record retired) is not joined: it is gone.
    if (c.merged_into !== null && members.every((m) => m.closed_reason === 'retired')) continue;
    if (c.merged_into === null) {
      const copy: Candidate = {
        ...c,
        id: UNSTORED_ID + window.copies.size,
        merged_into: c.id,
        closed_reason: c.closed_reason === 'retired' ? 'retired' : 'merged',
      };
      window.copies.set(c.id, copy);
      window.members.set(place, [{ source: c.source, closed_reason: copy.closed_reason }]);
    }
    window.members.get(place)!.push({ source: r.source, closed_reason: 'merged' });
    window.joined.set(r.id, place);
    window.merges.push({ id: r.id, placeId: place, made: c.merged_into === null });
    return place;
  }
  return undefined;
}

/** Makes the merges decided for a window: the places first (their records' new rows in order), then the joins and their leads. */
async function applyMerges(writer: ConflationWriter, trx: Conn, window: Window, now: string): Promise<void> {
  if (window.merges.length === 0) return;
  await writer.makePlaces(
    trx,
    window.merges.filter((m) => m.made).map((m) => m.placeId),
    now,
  );
  const joins = window.merges.map((m) => ({ id: m.id, placeId: m.placeId }));
  await writer.joinPlaces(trx, joins, now);
  await moveLeadsToPlaces(trx, joins);
  window.merges = [];
}

/** What a place was merged from: its records' ids, content hashes and states. */
const mergeStateOf = (members: readonly { id: number; hash: string; reason: string | null }[]): string =>
  members.map((m) => `${m.id}:${m.hash}:${m.reason ?? ''}`).join(',');

/**
 * Merges places `placeIds` again from their records that their sources still hold: values, sources and
 * field sources; closed when every record says closed; retired (keeping its last values) when none is left.
 */
async function remerge(
  writer: ConflationWriter,
  trx: Conn,
  placeIds: readonly number[],
  now: string,
  text: StoredPlaceText,
): Promise<void> {
  if (placeIds.length === 0) return;
  const membersByPlace = await membersOf(trx, placeIds);
  const places = await placeStates(trx, placeIds);
  const writes: PlaceWrite[] = [];
  for (const placeId of placeIds) {
    const members = membersByPlace.get(placeId) ?? [];
    const place = places.get(placeId);
    if (!place || members.length === 0) continue;
    const state = mergeStateOf(members.map((m) => ({ id: m.id, hash: m.content_hash, reason: m.closed_reason })));
    const live = members.filter((m) => m.closed_reason !== 'retired');
    if (live.length === 0) {
      await writePlace(trx, placeId, { merge_state: state, closed_reason: 'retired', closed_at: place.closed_at ?? now });
      continue;
    }
    const merged = mergeRecords(live);
    const hash = mergedContentHash(merged, place.public_id, mergedSourceId(place.public_id));
    writes.push({
      id: placeId,
      ...mergedColumns(merged),
      ...text.of(merged.values),
      content_hash: hash,
      sources: JSON.stringify(merged.sources),
      field_sources: JSON.stringify(merged.fieldSources),
      merge_state: state,
      updated_at: hash !== place.content_hash ? now : null,
      closed_reason: merged.closed ? 'closed' : null,
      closed_at: merged.closed ? (place.closed_reason === 'closed' ? place.closed_at : now) : null,
    });
  }
  await writer.writePlaces(trx, writes);
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
  const writer = conflationWriter(db);
  for (let i = 0; i < stale.length; i += CHUNK) {
    await conflationTransaction(db)((trx) => remerge(writer, trx, stale.slice(i, i + CHUNK), now, text));
  }
  return stale.length;
}
