// Contact extraction quality on the labelled pages of ../shared/data/websites: precision and recall of emails,
// phones and social profiles for the tuning part and the held-out part, next to a baseline measured in the same
// run (the naive extraction the index records: regular expressions over the markup, every social link, and
// libphonenumber's matcher over the visible text without our label, fax and grouping rules).
// Run: npm run bench:contacts-quality
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPhoneNumbersInText, isSupportedCountry } from 'libphonenumber-js/max';
import { canonicalSocial } from '../src/modules/contacts/socials.ts';
import { extractContacts } from '../src/modules/enrichment/extract/extract.ts';
import { scanPage } from '../src/modules/enrichment/extract/page-scan.ts';
import { normalisePhone } from '../src/modules/geo/phone.ts';
import {
  type ContactScores,
  type LabelledPage,
  loadLabelledSet,
  type PageFindings,
  precision,
  recall,
  scorePages,
  websitesDir,
} from '../test/helpers/contacts-labelled-set.ts';

interface Heuristics {
  emails_regex: string[];
  mailto: string[];
  cloudflare_decoded: string[];
  obfuscation: string[];
  social_links: string[];
}
const heuristics = new Map(
  readFileSync(join(websitesDir, 'index.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { file: string; heuristics: Heuristics })
    .map((r) => [r.file, r.heuristics]),
);

function ours(page: LabelledPage): PageFindings {
  const found = extractContacts([{ url: page.url, html: page.html }], { countryCode: page.country, siteDomain: page.siteDomain });
  return { emails: found.emails.map((e) => e.address), phones: found.phones.map((p) => p.e164), socials: found.socials.map((s) => s.url) };
}

function baseline(page: LabelledPage): PageFindings {
  const h = heuristics.get(page.file)!;
  const country = isSupportedCountry(page.country) ? page.country : undefined;
  return {
    emails: [...h.emails_regex, ...h.mailto, ...h.cloudflare_decoded, ...h.obfuscation].map((e) => decodeURIComponent(e).trim()),
    phones: findPhoneNumbersInText(scanPage(page.html).text, country ? { defaultCountry: country } : {}).map((m) => m.number.number),
    socials: h.social_links.map((link) => canonicalSocial(link)?.url ?? link),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1).padStart(5)} %`;

function print(label: string, scores: ContactScores, base: ContactScores): void {
  console.log(`\n${label}`);
  console.log('field     precision   recall    (TP/FP, found/truth)      baseline precision   recall');
  for (const field of ['emails', 'phones', 'socials'] as const) {
    const s = scores[field];
    const b = base[field];
    console.log(
      `${field.padEnd(9)} ${pct(precision(s))}   ${pct(recall(s))}   (${s.truePositives}/${s.falsePositives}, ${s.found}/${s.truth})`.padEnd(
        58,
      ) + `${pct(precision(b))}   ${pct(recall(b))}`,
    );
  }
}

const pages = loadLabelledSet();
const normalise = (raw: string, country: string) => normalisePhone(raw, country);
for (const [label, part] of [
  ['tuning part', pages.filter((p) => !p.heldOut)],
  ['held-out part (never tuned on)', pages.filter((p) => p.heldOut)],
  ['all pages', pages],
] as const) {
  const sites = new Set(part.map((p) => p.site)).size;
  print(`${label}: ${part.length} pages of ${sites} sites`, scorePages(part, ours, normalise), scorePages(part, baseline, normalise));
}

// Recall against the set's own EMAIL labels alone (the contact pages), independent of our judgements.
const labelled = pages.filter((p) => p.emailLabels.length > 0);
const labels = labelled.flatMap((p) => p.emailLabels.map((label) => ({ page: p, label: label.toLowerCase() })));
const foundLabels = labels.filter(({ page, label }) => ours(page).emails.some((e) => e.toLowerCase() === label));
console.log(`\nEMAIL labels of the set (${labelled.length} contact pages): ${foundLabels.length}/${labels.length} found`);

// Cost: pages per second over the labelled set (best of three passes), and two hostile pages: digit noise
// (1.8 MB of `1 2 3 …` in one paragraph), which a matcher fed whole lines reads for tens of seconds, and
// 600,000 unclosed `<b>` (1.8 MB), whose parse by htmlparser2 alone grows with the square of the depth.
function timed(run: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    run();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}
const oursMs = timed(() => pages.forEach(ours));
const baselineMs = timed(() => pages.forEach(baseline));
const noise = `<html><body><p>${'1 2 3 4 5 6 7 8 9 '.repeat(100_000)}</p><p>Tel. 089 2199890</p></body></html>`;
const noiseMs = timed(() =>
  extractContacts([{ url: 'https://noise.example/', html: noise }], { countryCode: 'DE', siteDomain: 'noise.example' }),
);
const nested = `<p>info@nested.example</p>${'<b>'.repeat(600_000)}`;
const nestedMs = timed(() =>
  extractContacts([{ url: 'https://nested.example/', html: nested }], { countryCode: 'DE', siteDomain: 'nested.example' }),
);
console.log(
  `\ncost: ${(pages.length / (oursMs / 1000)).toFixed(0)} pages/s (baseline ${(pages.length / (baselineMs / 1000)).toFixed(0)} pages/s)`,
);
console.log(
  `a ${(noise.length / 1e6).toFixed(1)} MB page of digit noise: ${noiseMs.toFixed(0)} ms; a ${(nested.length / 1e6).toFixed(1)} MB page of unclosed tags: ${nestedMs.toFixed(0)} ms`,
);
