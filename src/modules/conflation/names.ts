import { foldText } from '../../infra/text.ts';
import { boundedEditDistance } from '../geo/name-distance.ts';
import { matchRules } from './rules.ts';

/**
 * Words that say what kind of business or company a name belongs to, not which one: a source writes
 * `Restaurant Torkel` where another writes `Torkel`, `Ravintola Olo` (Finnish) where another writes `Olo`.
 * Articles and joining words are here too (`The Kitchin`, `Celler d'en Toni`). Folded with `foldText`.
 * Cuisine words (`Japanese`, `Sushi`) are not: they tell businesses apart more often than not.
 */
export const GENERIC_NAME_WORDS: ReadonlySet<string> = new Set([
  // kinds of business, in the languages of the data
  'restaurant',
  'restaurants',
  'restaurante',
  'ristorante',
  'ravintola',
  'restauracja',
  'restoran',
  'resto',
  'ресторан',
  'cafe',
  'caffe',
  'cafeteria',
  'kaffee',
  'kahvila',
  'coffee',
  'bar',
  'pub',
  'bistro',
  'bistrot',
  'brasserie',
  'trattoria',
  'osteria',
  'taverna',
  'tavern',
  'gasthaus',
  'gasthof',
  'wirtshaus',
  'eatery',
  'diner',
  'hotel',
  'hotels',
  // legal forms
  'gmbh',
  'ag',
  'kg',
  'ohg',
  'ug',
  'ltd',
  'limited',
  'llc',
  'llp',
  'inc',
  'co',
  'corp',
  'plc',
  'sa',
  'sarl',
  'sas',
  'srl',
  'spa',
  'bv',
  'nv',
  'oy',
  'oyj',
  'ab',
  'as',
  'aps',
  'kft',
  'sro',
  // articles and joining words
  'the',
  'a',
  'an',
  'of',
  'at',
  'by',
  'and',
  'le',
  'la',
  'les',
  'l',
  'un',
  'une',
  'du',
  'des',
  'de',
  'd',
  'au',
  'aux',
  'et',
  'el',
  'los',
  'las',
  'y',
  'il',
  'lo',
  'gli',
  'i',
  'di',
  'da',
  'del',
  'della',
  'dello',
  'e',
  'der',
  'die',
  'das',
  'dem',
  'den',
  'und',
  'zum',
  'zur',
  'im',
  'am',
  'do',
  'dos',
  'en',
  'em',
]);

/** A name made ready for comparison: its distinctive words and the same run together. */
export interface NameForm {
  tokens: string[];
  /** The tokens without spaces (`lazybear`): catches `Lazy Bear` vs `LazyBear`. */
  joined: string;
  /** Letters and digits in the tokens. */
  letters: number;
}

const digitsOnly = /^\d+$/;

/**
 * The distinctive words of a name: folded, generic words and lone letters left out (`Michael's` folds to
 * `michael s`). A name of generic words only (`Le Grill` keeps `grill`; `The Bar` keeps both) keeps them all.
 */
export function nameForm(name: string): NameForm | null {
  const words = foldText(name)
    .split(' ')
    .filter((w) => w !== '');
  if (words.length === 0) return null;
  let tokens = words.filter((w) => !GENERIC_NAME_WORDS.has(w) && (w.length > 1 || digitsOnly.test(w)));
  if (tokens.length === 0) tokens = words;
  const joined = tokens.join('');
  return { tokens, joined, letters: joined.length };
}

/** At most this many names of one record are compared (display name first, then the `names` JSON). */
const MAX_NAMES = 6;

/**
 * A record's other names from its `names` JSON (`{"en": "…", "alt": ["…"]}`), except former names (`old`):
 * a former name is most often another business's, the one that had the premises before (`Pavyllon`, formerly
 * `Le Vistamar`).
 */
function otherNames(names: string | null): string[] {
  if (names === null || names === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(names);
  } catch {
    return [];
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(parsed)) {
    if (FORMER_NAME_KEYS.has(key)) continue;
    for (const v of Array.isArray(value) ? value : [value]) if (typeof v === 'string') out.push(v);
  }
  return out;
}

const FORMER_NAME_KEYS: ReadonlySet<string> = new Set(['old', 'was']);

/** The forms of a record's display name and of its other names (localised, alternative), without repeats. */
export function nameForms(name: string, names: string | null): NameForm[] {
  const out: NameForm[] = [];
  const seen = new Set<string>();
  for (const n of [name, ...otherNames(names)]) {
    const form = nameForm(n);
    if (form === null || seen.has(form.joined)) continue;
    seen.add(form.joined);
    out.push(form);
    if (out.length === MAX_NAMES) break;
  }
  return out;
}

/** Edits allowed between two words that count as one: none below 5 letters, one from 5, two from 9. */
function allowedEdits(length: number): number {
  return length >= 9 ? 2 : length >= 5 ? 1 : 0;
}

/** Two words that are the same word, spelling slips aside (`halsted`/`halstead`). */
export function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  const max = allowedEdits(Math.min(a.length, b.length));
  return max > 0 && boundedEditDistance(a, b, max) <= max;
}

export interface NameComparison {
  /** 0–1: the larger of the word overlap (Dice over words, spelling slips allowed) and the letter similarity of the joined forms. */
  similarity: number;
  /** Every distinctive word of the shorter name is in the longer one (`Rampoldi` in `La Table d'Antonio Salvatore au Rampoldi`). */
  contained: boolean;
}

/** Words of `small` found in `large`, each word of `large` used once. */
function wordsFound(small: readonly string[], large: readonly string[]): number {
  const used = new Array<boolean>(large.length).fill(false);
  let found = 0;
  for (const w of small) {
    for (let j = 0; j < large.length; j++) {
      if (!used[j] && sameWord(w, large[j]!)) {
        used[j] = true;
        found++;
        break;
      }
    }
  }
  return found;
}

function letterSimilarity(a: string, b: string): number {
  const longest = Math.max(a.length, b.length);
  if (longest === 0) return 0;
  // Below 0.5 the exact figure does not matter: the edit distance is bounded there, which is cheaper.
  const max = Math.floor(longest / 2);
  const edits = boundedEditDistance(a, b, max);
  return edits > max ? 0 : 1 - edits / longest;
}

export function compareNameForms(a: NameForm, b: NameForm): NameComparison {
  const [small, large] = a.tokens.length <= b.tokens.length ? [a, b] : [b, a];
  const found = wordsFound(small.tokens, large.tokens);
  const dice = (2 * found) / (a.tokens.length + b.tokens.length);
  const similarity = Math.max(dice, letterSimilarity(a.joined, b.joined));
  const contained = found === small.tokens.length && small.letters >= matchRules.containedMinLetters;
  return { similarity, contained };
}

/** The best comparison over every pair of the two records' names. */
export function compareNames(a: readonly NameForm[], b: readonly NameForm[]): NameComparison {
  let best: NameComparison = { similarity: 0, contained: false };
  for (const x of a) {
    for (const y of b) {
      const c = compareNameForms(x, y);
      if (c.similarity > best.similarity) best = { similarity: c.similarity, contained: best.contained || c.contained };
      else if (c.contained) best = { ...best, contained: true };
    }
  }
  return best;
}
