/**
 * Folds text for matching names across spellings: Unicode NFKD, combining marks removed, lower case,
 * punctuation to spaces, runs of space collapsed. `Köln` → `koln`, `Café  de l'Opéra` → `cafe de l opera`.
 * Non-Latin scripts are kept (NFKD also folds full-width Latin and Japanese half-width forms).
 * Letters that NFKD does not decompose are mapped explicitly (ß, æ, ø, ł, đ, ı…).
 */
const extra: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i', ħ: 'h' };
const extraPattern = new RegExp(`[${Object.keys(extra).join('')}]`, 'g');

export function foldText(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(extraPattern, (c) => extra[c] ?? c)
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}
