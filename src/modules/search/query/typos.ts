import { foldText, jsonStrings, searchFold, searchForm } from '../../../infra/text.ts';

/**
 * The typo rules of text search: how many edits a word may carry, the exact pieces the text index looks up for
 * its candidates, and the edit distances that decide them.
 */

/**
 * Exact pieces of a word (folded) that a spelling with few edits must still contain, so that the text index
 * can list the candidates (the edit distance decides). With k edits allowed, k+1 pieces with a letter left
 * out between neighbours: an edit, two neighbouring letters swapped included, breaks at most one of them,
 * so one survives. A word too short for that gets k+1 adjoining pieces, plus for each boundary the two
 * pieces beside it with its letters swapped back (`Belrin`: `bel`, `rin` and `berlin`). Words too short
 * for pieces of 3 characters have pieces the index cannot look up (see `fuzzyNarrowed`).
 */
export function fuzzyPieces(word: string): string[] {
  const chars = [...searchFold(word)];
  const edits = allowedEdits(word);
  if (edits === 0) return [chars.join('')];
  const parts = edits + 1;
  const n = chars.length;
  const gapped = n >= 3 * parts + edits;
  const letters = gapped ? n - edits : n;
  const bounds: Array<[number, number]> = [];
  for (let i = 0, at = 0; i < parts; i++) {
    const size = Math.floor(((i + 1) * letters) / parts) - Math.floor((i * letters) / parts);
    bounds.push([at, at + size]);
    at += size + (gapped ? 1 : 0);
  }
  const out = bounds.map(([from, to]) => chars.slice(from, to).join(''));
  if (!gapped) {
    for (let i = 0; i + 1 < parts; i++) {
      const joined = chars.slice(bounds[i]![0], bounds[i + 1]![1]);
      const b = bounds[i]![1] - bounds[i]![0];
      [joined[b - 1], joined[b]] = [joined[b]!, joined[b - 1]!];
      out.push(joined.join(''));
    }
  }
  return out;
}

/**
 * Typos tolerated in a word: none under 4 characters, 1 up to 8, 2 from 9. From 6 characters the text
 * index finds the candidates by pieces of 3 characters; a 4–5 character word's pieces are too short for
 * it, so its candidates must come from the other criteria (see `fuzzyNarrowed`).
 */
export function allowedEdits(word: string): number {
  const n = [...foldText(word)].length;
  return n >= 9 ? 2 : n >= 4 ? 1 : 0;
}

/** Whether a piece of a word can be looked up in the text index (3 characters or more in search form). */
export const indexablePiece = (piece: string): boolean => [...searchForm(piece)].length >= 3;

/**
 * Typo-tolerant candidates verified at most (the default of `SEARCH_TYPO_CANDIDATES`). A search with more candidates does not tolerate typos
 * (its answer says so: `resolved.typos`): the candidates are read and checked one by one.
 */
export const fuzzyCandidateLimit = 10_000;

/**
 * The largest area (square degrees: about 111 × 111 km at the equator) whose places may be the
 * typo-tolerant candidates when no city, country, type or indexable word narrows them.
 */
export const fuzzyMaxAreaDeg2 = 1;

/**
 * Smallest number of edits turning `pattern` into some substring of `text` (Sellers' algorithm), capped at
 * max+1. An edit is a letter inserted, deleted or replaced, or two neighbouring letters swapped (the
 * optimal string alignment distance): `Belrin` is one edit from `Berlin`, as a typist sees it.
 */
export function substringEditDistance(pattern: string, text: string, max: number): number {
  const p = [...pattern];
  const t = [...text];
  let before = new Array<number>(t.length + 1).fill(0);
  let prev = new Array<number>(t.length + 1).fill(0);
  let cur = new Array<number>(t.length + 1).fill(0);
  for (let i = 1; i <= p.length; i++) {
    cur[0] = i;
    let rowMin = i;
    for (let j = 1; j <= t.length; j++) {
      const cost = p[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(prev[j - 1]! + cost, prev[j]! + 1, cur[j - 1]! + 1);
      if (i > 1 && j > 1 && p[i - 1] === t[j - 2] && p[i - 2] === t[j - 1] && before[j - 2]! + 1 < d) d = before[j - 2]! + 1;
      cur[j] = d;
      if (d < rowMin) rowMin = d;
    }
    // No later row falls below this row's minimum (a swap reaches back two rows, at one edit more).
    if (rowMin > max) return max + 1;
    [before, prev, cur] = [prev, cur, before];
  }
  return Math.min(max + 1, ...prev.slice(1), p.length);
}

/** Edits (as `substringEditDistance` counts them) turning one whole text into the other. */
export function editDistance(a: string, b: string): number {
  const p = [...a];
  const t = [...b];
  let before: number[] = [];
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= p.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      let d = Math.min(prev[j - 1]! + (p[i - 1] === t[j - 1] ? 0 : 1), prev[j]! + 1, cur[j - 1]! + 1);
      if (i > 1 && j > 1 && p[i - 1] === t[j - 2] && p[i - 2] === t[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      cur.push(d);
    }
    [before, prev] = [prev, cur];
  }
  return prev[t.length]!;
}

/** Every name of a place, folded: the display name and each string in the `names` JSON. */
export function foldedNames(name: string, names: string | null): string {
  return foldText([name, ...jsonStrings(names)].join(' '));
}

/** Total edits a fuzzy match needed (sum over words), or null when a word is further off than it may be. */
export function fuzzyDistance(words: string[], name: string, names: string | null): number | null {
  const text = foldedNames(name, names);
  let total = 0;
  for (const word of words) {
    const w = foldText(word);
    const max = allowedEdits(w);
    const d = substringEditDistance(w, text, max);
    if (d > max) return null;
    total += d;
  }
  return total;
}
