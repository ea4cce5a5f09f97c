import { type CountryCode, findPhoneNumbersInText, isSupportedCountry } from 'libphonenumber-js/max';
import { normalisePhone } from '../../geo/phone.ts';

export interface PhoneInText {
  e164: string;
  raw: string;
  /** What the label before the number (or a `(fax)` after it) calls it; null when unlabelled. Numbers labelled as something else (`IBAN`, `VAT`) are not returned. */
  label: 'fax' | 'phone' | null;
}

/**
 * Words that label a number: fax (group 1), phone (group 2), identifiers that are not phone numbers (bank
 * accounts, tax, company and VAT registrations, order numbers; group 3), and the one-letter labels of address
 * blocks right before the number (`F:`, `T.`, `M 0171…`; group 4). The last label before a number, within a
 * window that may reach back over a line break (`Fax:` above its number), says what the number is.
 */
const LABEL = new RegExp(
  [
    '\\b(?:(e-?fax|fax|facsimile|telefax|t[ée]l[ée]copie|fx)',
    '(tel|t[ée]l|tele|telephone|t[ée]l[ée]phone|telefon|telefono|tel[ée]fono|phone|ph|call|mob|mobile|mobil|handy|cell|cellulare|portable|m[óo]vil|telem[óo]vel|tlm|tlf|tfno|telefone|telefoon|mobiel|gsm|hotline|freephone|toll[- ]free|dial|fon|office|direct|contact|kontakt|whatsapp)',
    '(iban|bic|swift|blz|konto|kto|account\\s*(?:no|number|#)|sort code|ust|ust-?id\\w*|vat|steuer\\w*|st\\.?-?nr|tax|hrb|hra|handelsregister|register\\w*|reg|registration|registered|company no|company number|siret|siren|rcs|iva|partita|codice fiscale|kvk|btw|cif|nif|nipc|nie|abn|acn|ein|licen[cs]e|lic|isbn|order\\s*(?:no|number|#|id)|item\\s*(?:no|number|#)|sku|art\\.?-?nr|artikel\\w*|ref|invoice|rechnung\\w*|kundennummer|customer no|id))\\b',
    '\\b([ftpm])\\s*[:.]?\\s*$',
  ].join('|'),
  'gi',
);
/** `Tel/Fax:`: one number for both, so a phone. */
const PHONE_AND_FAX = /\b(?:tel|phone|ph)\.?\s*[/&+]\s*$/i;
/** How much text before a number is read for its label. */
const LABEL_WINDOW = 100;
/** A fax label written after the number: `1-310-260-8918 (fax)`, `(916) 786-9175 [fax]`. */
const FAX_AFTER = /^\s*(?:[([]\s*(?:e-?fax|fax|facsimile)\s*[)\]]|-?\s*(?:e-?fax|fax|facsimile)\s*$)/i;
const CURRENCY = /[$€£¥₹]\s*$|\b(?:usd|eur|gbp|aud|cad|chf)\s*$/i;
const DATE = /^\d{1,4}[./-]\d{1,2}[./-]\d{2,4}$/;
/** Opening hours (`08.00-12.00 14.00-18.00`) that a lenient numbering plan would read as a number. */
const HOURS = /\b\d{1,2}[.:]\d{2}\s*[-–]\s*\d{1,2}[.:]\d{2}\b/;

/** A number written before this one: a label before it is that number's. */
const EARLIER_NUMBER = /\d[\d\s().\-/]{5,}\d(?!.*\d[\d\s().\-/]{5,}\d)/s;

function lastLabel(window: string): 'fax' | 'phone' | 'other' | null {
  const earlier = EARLIER_NUMBER.exec(window);
  const before = earlier ? window.slice(earlier.index + earlier[0].length) : window;
  let last: 'fax' | 'phone' | 'other' | null = null;
  for (const match of before.matchAll(LABEL)) {
    const letter = match[4]?.toLowerCase();
    const fax = match[1] !== undefined || letter === 'f';
    last = match[3] !== undefined ? 'other' : fax && !PHONE_AND_FAX.test(before.slice(0, match.index)) ? 'fax' : 'phone';
  }
  return last;
}

/**
 * A stretch of text that may hold phone numbers: digits with the separators numbers are written with, not glued
 * to a word (`DE89 3704…`, `MCCAIN1`) nor the decimals of a number (`1.6724…`). Only these
 * stretches go to libphonenumber's matcher, which costs about a millisecond per line of text it reads.
 */
const CANDIDATE = /(?<![\p{L}\p{N}]|\d[.,])(?:\+|\()?\d(?:[\d().\-/–]|\s(?=[\d(+/.\-–]))*\d/gu;
/** Longer stretches of digits are tables, lists of figures or noise, not one or two phone numbers. */
const MAX_SPAN = 60;
/** Characters of candidate stretches read per page: a page cannot make extraction slow. */
const MATCHER_BUDGET = 20_000;

function country(countryCode: string | null): CountryCode | undefined {
  return countryCode && isSupportedCountry(countryCode) ? countryCode : undefined;
}

/**
 * Phone numbers in visible text, found by libphonenumber's matcher in the place's country and kept only
 * when they are valid numbers that look written as phone numbers: grouped digits or a `+`, or a plain digit
 * run right after a phone label (a bare run of digits is an order number or an id more often than a phone).
 * Dates and prices are dropped; numbers labelled as fax are returned marked.
 */
export function phonesInText(text: string, countryCode: string | null): PhoneInText[] {
  const defaultCountry = country(countryCode);
  const found: PhoneInText[] = [];
  let budget = MATCHER_BUDGET;
  let searchFrom = 0;
  for (const original of text.split('\n')) {
    const lineStart = text.indexOf(original, searchFrom);
    searchFrom = lineStart + original.length;
    if (!/\d(?:\D{0,3}\d){5}/.test(original)) continue;
    // `+44 (0) 20 …`: the trunk prefix written after the country code would make the matcher miss the number.
    const line = original.replace(/(\+\d{1,3})\s*\(0\)\s*/g, '$1 ');
    for (const span of line.matchAll(CANDIDATE)) {
      const digits = span[0].replace(/\D/g, '').length;
      // Too short or too long to be one or two numbers: not a phone.
      if (digits < 6 || span[0].length > MAX_SPAN) continue;
      budget -= span[0].length;
      if (budget < 0) return found;
      for (const match of findPhoneNumbersInText(span[0], defaultCountry ? { defaultCountry } : {})) {
        if (!match.number.isValid()) continue;
        const startsAt = span.index + match.startsAt;
        const endsAt = span.index + match.endsAt;
        let raw = line.slice(startsAt, endsAt).trim();
        if (raw.startsWith('(') && !raw.includes(')')) raw = raw.slice(1);
        const before = `${text.slice(Math.max(0, lineStart - LABEL_WINDOW), lineStart)}${line.slice(0, startsAt)}`.slice(-LABEL_WINDOW);
        const after = line.slice(endsAt, endsAt + 12);
        if (
          DATE.test(raw) ||
          HOURS.test(raw) ||
          CURRENCY.test(before) ||
          /^\s*(?:[$€£%]|usd|eur)/i.test(after) ||
          (raw.match(/\//g)?.length ?? 0) > 1
        )
          continue;
        const label = lastLabel(before);
        if (label === 'other') continue;
        const grouped = /[\s().\-/]/.test(raw.replace(/^\+/, '')) || raw.startsWith('+');
        if (!grouped && label !== 'phone') continue;
        found.push({ e164: match.number.number, raw, label: FAX_AFTER.test(after) ? 'fax' : label });
      }
    }
  }
  return found;
}

/** A number given in markup (`tel:` link, JSON-LD `telephone`, microdata), where the page itself says it is a phone. */
export function phoneFromMarkup(raw: string, countryCode: string | null): string | null {
  let value = raw.replace(/^tel:/i, '').trim();
  try {
    value = decodeURIComponent(value);
  } catch {
    // A stray `%`: keep the raw text.
  }
  return normalisePhone(value, country(countryCode) ?? null);
}
