/**
 * Folds text for matching names across spellings: Unicode NFKD, combining marks removed, lower case,
 * punctuation to spaces, runs of space collapsed. `Köln` → `koln`, `Café  de l'Opéra` → `cafe de l opera`.
 * Non-Latin scripts are kept (NFKD also folds full-width Latin and Japanese half-width forms).
 * Letters that NFKD does not decompose are mapped explicitly (ß, æ, ø, ł, đ, ı…).
 */
const extra: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i', ħ: 'h' };
const extraPattern = new RegExp(`[${Object.keys(extra).join('')}]`, 'g');

export function foldText(text: string): string {
  return foldWith(text.normalize('NFKD').replace(/\p{M}+/gu, ''));
}

/** Case, the letters NFKD leaves alone, punctuation and spaces: the steps after the marks are gone. */
function foldWith(decomposed: string): string {
  return decomposed
    .toLowerCase()
    .replace(extraPattern, (c) => extra[c] ?? c)
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** Every combining mark but the kana voicing marks (゙ ゚): バ and パ are other letters than ハ, not ハ with an accent. */
const marksButKanaVoicing = /(?:(?![\u3099\u309a])\p{M})+/gu;

/**
 * `foldText` as search matches names: the same, except that Japanese kana keep their voicing (`バー`, a bar,
 * is not `ハー`), as PostgreSQL's unaccent leaves them.
 */
export function searchFold(text: string): string {
  // Most names are plain ASCII, where folding is lower case and punctuation to spaces (the index writes one
  // document a place: this saves most of its cost).
  if (asciiOnly.test(text))
    return text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, ' ')
      .trim();
  return foldWith(text.normalize('NFKD').replace(marksButKanaVoicing, '').normalize('NFC'));
}

const asciiOnly = /^[\x00-\x7f]*$/;

/**
 * Letters of scripts written without spaces between words (Chinese, Japanese): in the search form each is a
 * word of its own, so that a query of one or two of them is still a phrase of three characters or more
 * (what a trigram index can look up) and still matches inside a longer name.
 */
const unspaced = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3005\u30fc]/u;
const unspacedAll = new RegExp(unspaced.source, 'gu');

/**
 * The form names take in the full-text index and queries take to look them up: `searchFold`, with the
 * letters of unspaced scripts set apart by spaces (`ドトール新宿店` → `ド ト ー ル 新 宿 店`).
 */
export function searchForm(text: string): string {
  const folded = searchFold(text);
  if (asciiOnly.test(folded) || !unspaced.test(folded)) return folded;
  return folded.replace(unspacedAll, ' $& ').replace(/ {2,}/g, ' ').trim();
}

/**
 * Separates the names in a search document. `foldText` leaves letters, digits and single spaces only, so
 * the mark never occurs inside a name: `"$ name $"` is a whole name, `"$ name"` the start of one.
 */
export const nameMark = '$';

/** Every string in a JSON value (object values and array items, at any depth), in document order. */
export function jsonStrings(json: string | null): string[] {
  if (json === null || json === '') return [];
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  try {
    walk(JSON.parse(json));
  } catch {
    // A column that is not JSON adds no names.
  }
  return out;
}

/**
 * What the full-text index holds for a place: its display name first, then every other name of the `names`
 * JSON, each in search form and between marks: `$ cafe nandu $ カ フ ェ $`. Names that fold to nothing or
 * repeat an earlier one are left out.
 */
export function searchDocument(name: string, names: string | null): string {
  const forms: string[] = [];
  for (const n of names === null ? [name] : [name, ...jsonStrings(names)]) {
    const form = searchForm(n);
    if (form !== '' && !forms.includes(form)) forms.push(form);
  }
  return forms.length === 0 ? `${nameMark} ${nameMark}` : `${nameMark} ${forms.join(` ${nameMark} `)} ${nameMark}`;
}
