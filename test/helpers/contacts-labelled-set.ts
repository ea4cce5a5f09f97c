import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { findPhoneNumbersInText, isSupportedCountry } from 'libphonenumber-js/max';
import { detectEncoding } from '../../src/modules/importers/readers/text-source.ts';

/** The saved business pages of `../shared/data/websites` (internal tests only: read by path, never copied). */
export const websitesDir = join(import.meta.dirname, '..', '..', '..', 'shared', 'data', 'websites');
const judgedPath = join(import.meta.dirname, '..', 'fixtures', 'contacts', 'judged-contacts.json');

interface IndexRecord {
  file: string;
  site?: string;
  url: string | null;
  labels: Record<string, string[]>;
}

interface JudgedPage {
  /** SHA-256 (hex) of each lower-cased address a reader of the page would write to. */
  emails: string[];
  /** SHA-256 (hex) of each canonical profile URL of the business itself. */
  socials: string[];
}

export interface JudgedContacts {
  note: string;
  heldOut: { rule: string; sites: string[] };
  sites: Record<string, { country: string; domain: string }>;
  pages: Record<string, JudgedPage>;
}

export interface LabelledPage {
  file: string;
  site: string;
  url: string;
  html: string;
  country: string;
  siteDomain: string;
  heldOut: boolean;
  /** Phone labels of the set (`TEL`) and fax labels (`FAX`), raw as the annotators marked them. */
  tel: string[];
  fax: string[];
  /** The set's own EMAIL labels (on the contact pages only). */
  emailLabels: string[];
  emailHashes: Set<string>;
  socialHashes: Set<string>;
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The site a page belongs to: its folder for the business pages, the page itself for the contact pages of unrelated sites. */
export function siteOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'webstruct_business' ? parts[1]! : `${parts[0]}/${parts[1]!.replace(/\.html$/, '')}`;
}

/**
 * The held-out third: sites whose name hashes to 0 modulo 3. Chosen by hash, not by hand, so that nothing about
 * the pages decided which ones are never tuned on.
 */
export function isHeldOut(site: string): boolean {
  return Number.parseInt(sha256(site).slice(0, 8), 16) % 3 === 0;
}

export function decodePage(bytes: Buffer): string {
  const encoding = detectEncoding(bytes);
  return encoding === 'windows-1252' ? new TextDecoder('windows-1252').decode(bytes) : iconv.decode(bytes, encoding);
}

export function readJudged(): JudgedContacts {
  return JSON.parse(readFileSync(judgedPath, 'utf8')) as JudgedContacts;
}

export function loadLabelledSet(judged: JudgedContacts | null = readJudged()): LabelledPage[] {
  const records = readFileSync(join(websitesDir, 'index.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as IndexRecord);
  return records.map((record) => {
    const site = siteOf(record.file);
    const known = judged?.sites[site];
    const page = judged?.pages[record.file];
    return {
      file: record.file,
      site,
      url: record.url ?? `http://${known?.domain ?? 'unknown.invalid'}/`,
      html: decodePage(readFileSync(join(websitesDir, record.file))),
      country: known?.country ?? 'US',
      siteDomain: known?.domain ?? (record.url ? new URL(record.url).hostname : 'unknown.invalid'),
      heldOut: isHeldOut(site),
      tel: record.labels.TEL ?? [],
      fax: record.labels.FAX ?? [],
      emailLabels: record.labels.EMAIL ?? [],
      emailHashes: new Set(page?.emails ?? []),
      socialHashes: new Set(page?.socials ?? []),
    };
  });
}

export interface FieldScore {
  truePositives: number;
  falsePositives: number;
  /** Items of the truth set that were found. */
  found: number;
  /** Items of the truth set. */
  truth: number;
}

export const precision = (s: FieldScore): number =>
  s.truePositives + s.falsePositives === 0 ? 1 : s.truePositives / (s.truePositives + s.falsePositives);
export const recall = (s: FieldScore): number => (s.truth === 0 ? 1 : s.found / s.truth);

export interface PageFindings {
  emails: string[];
  phones: string[];
  socials: string[];
}

export type ContactScores = Record<'emails' | 'phones' | 'socials', FieldScore>;

const emptyScore = (): FieldScore => ({ truePositives: 0, falsePositives: 0, found: 0, truth: 0 });

function addScore(score: FieldScore, found: string[], truth: Set<string>): void {
  const unique = new Set(found);
  for (const item of unique) {
    if (truth.has(item)) score.truePositives++;
    else score.falsePositives++;
  }
  score.truth += truth.size;
  for (const item of truth) if (unique.has(item)) score.found++;
}

/**
 * The numbers a TEL label stands for: the label read as one number, and every number written inside it
 * (`1-866-MCCAIN1 (1-866-622-2461)` is labelled whole).
 */
export function telLabelNumbers(raw: string, country: string, normalise: (raw: string, country: string) => string | null): string[] {
  const whole = normalise(raw, country);
  const inside = isSupportedCountry(country) ? findPhoneNumbersInText(raw, { defaultCountry: country }).map((m) => m.number.number) : [];
  return [...(whole ? [whole] : []), ...inside];
}

/**
 * Scores what was found on each page against its truth: emails and socials by their hashes, phones by E.164
 * against the page's TEL labels (a fax number reported as a phone is a false positive).
 */
export function scorePages(
  pages: LabelledPage[],
  findingsOf: (page: LabelledPage) => PageFindings,
  normalise: (raw: string, country: string) => string | null,
): ContactScores {
  const scores: ContactScores = { emails: emptyScore(), phones: emptyScore(), socials: emptyScore() };
  for (const page of pages) {
    const findings = findingsOf(page);
    addScore(
      scores.emails,
      findings.emails.map((e) => sha256(e.toLowerCase())),
      page.emailHashes,
    );
    addScore(scores.socials, findings.socials.map(sha256), page.socialHashes);
    const tel = new Set(page.tel.flatMap((raw) => telLabelNumbers(raw, page.country, normalise)));
    addScore(scores.phones, findings.phones, tel);
  }
  return scores;
}
