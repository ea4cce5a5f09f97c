import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { foldText } from '../../infra/text.ts';

/**
 * Legal forms of companies per country, from the ISO 20275 Entity Legal Forms code list that GLEIF maintains
 * (data/elf/, CC0): the local names and abbreviations of each active form, folded (`GmbH & Co. KG` →
 * `gmbh co kg`). A CRM writes `Müller GmbH & Co. KG` where the catalog has `Müller`: the form says what kind
 * of company it is, not which one.
 */
export interface LegalForms {
  /** The name without the legal forms of `country` at its end or start (all countries' when null); the name itself when nothing else would be left. */
  strip(name: string, country: string | null): string;
}

const csvPath = new URL('../../../data/elf/elf-code-list.csv', import.meta.url);
/**
 * Abbreviations in everyday use that GLEIF's list does not carry (its Portuguese rows carry none: `Lda` is
 * nowhere on it), per country, with the ELF code of the form when the list has it (`data/elf/README.md`).
 */
const abbreviationsPath = new URL('../../../data/elf/abbreviations.csv', import.meta.url);

/** Word sequences of the forms, longest first, by country code. */
type FormsByCountry = Map<string, string[][]>;

const readCsv = (text: string): Array<Record<string, string>> =>
  parse(text, { columns: true, skip_empty_lines: true, bom: true, relax_quotes: true }) as Array<Record<string, string>>;

function readForms(text: string, abbreviations: string): FormsByCountry {
  const sets = new Map<string, Set<string>>();
  const add = (country: string, written: readonly (string | undefined)[]): void => {
    const set = sets.get(country) ?? new Set<string>();
    for (const w of written) {
      const folded = w ? foldText(w) : '';
      if (folded !== '') set.add(folded);
    }
    sets.set(country, set);
  };
  for (const row of readCsv(abbreviations)) {
    const country = row['Country Code (ISO 3166-1)'];
    if (country) add(country, (row.Abbreviations ?? '').split(';'));
  }
  for (const row of readCsv(text)) {
    if (row['ELF Status ACTV/INAC'] !== 'ACTV') continue;
    const country = row['Country Code (ISO 3166-1)'];
    if (!country) continue;
    add(country, [
      row['Entity Legal Form name Local name'],
      row['Entity Legal Form name Transliterated name (per ISO 01-140-10)'],
      ...(row['Abbreviations Local language'] ?? '').split(';'),
      ...(row['Abbreviations transliterated'] ?? '').split(';'),
    ]);
  }
  const out: FormsByCountry = new Map();
  const all = new Set<string>();
  for (const [country, set] of sets) {
    out.set(country, sortForms(set));
    for (const f of set) all.add(f);
  }
  out.set('*', sortForms(all));
  return out;
}

const sortForms = (set: Set<string>): string[][] => [...set].map((f) => f.split(' ')).sort((a, b) => b.length - a.length);

function endsWith(words: readonly string[], form: readonly string[]): boolean {
  if (form.length >= words.length) return false;
  const start = words.length - form.length;
  return form.every((w, i) => words[start + i] === w);
}

function startsWith(words: readonly string[], form: readonly string[]): boolean {
  return form.length < words.length && form.every((w, i) => words[i] === w);
}

/** Forms of a country, or of every country the list has when the country is unknown or has none listed. */
export function loadLegalForms(
  text: string = readFileSync(csvPath, 'utf8'),
  abbreviations: string = readFileSync(abbreviationsPath, 'utf8'),
): LegalForms {
  const forms = readForms(text, abbreviations);
  return {
    strip(name, country) {
      const list = (country ? forms.get(country.toUpperCase()) : undefined) ?? forms.get('*') ?? [];
      let words = foldText(name)
        .split(' ')
        .filter((w) => w !== '');
      // A form joined to a parent's (`GmbH & Co. KG`) is folded as one sequence; each pass takes one off.
      for (let changed = true; changed; ) {
        changed = false;
        for (const form of list) {
          if (endsWith(words, form)) {
            words = words.slice(0, words.length - form.length);
            changed = true;
            break;
          }
          if (startsWith(words, form)) {
            words = words.slice(form.length);
            changed = true;
            break;
          }
        }
      }
      return words.join(' ');
    },
  };
}
