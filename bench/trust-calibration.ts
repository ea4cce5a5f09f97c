/**
 * Fits the confidence model of issue #33 (docs/trust.md) and prints its reliability on held-out values.
 *
 *   node --import tsx bench/trust-calibration.ts            # fit on the training part, print the held-out reliability tables
 *   node --import tsx bench/trust-calibration.ts --write    # and write models/trust-model.json
 *
 * The labelled set is built from real data in ../shared/data, read at run time and never copied:
 * - phones and websites: businesses two sources describe (the hand-judged same-business pairs of
 *   test/fixtures/conflation, and the pairs the conflation matcher makes between the Michelin guide and
 *   OpenStreetMap / Yelp Fusion); a source's value is right when the other source gives the same one (the
 *   same E.164 number, the same registrable domain), wrong when the other gives another;
 * - emails: the addresses a plain pattern finds in the saved business pages of `websites/`, right when our
 *   judgement of the page (test/fixtures/contacts/judged-contacts.json, hashes) says it is the business's.
 * Values are held out by a hash of the business's ids (a third), so a business is never on both sides.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import KDBush from 'kdbush';
import { registrableDomain } from '../src/infra/web-domain.ts';
import { matchPlaces } from '../src/modules/conflation/matcher.ts';
import { emailFacts, phoneFacts } from '../src/modules/contacts/evidence.ts';
import {
  emailFeatures,
  type LogisticModel,
  phoneFeatures,
  type TrustModel,
  trustModel,
  type ValueKind,
  websiteFeatures,
} from '../src/modules/contacts/trust-model.ts';
import type { PlaceRecord } from '../src/modules/places/place-record.ts';
import { readSampleSource, sampleFiles } from '../test/helpers/conflation-sample.ts';
import { loadLabelledSet, sha256 } from '../test/helpers/contacts-labelled-set.ts';

interface Labelled {
  kind: ValueKind;
  features: Record<string, number>;
  correct: boolean;
  heldOut: boolean;
  origin: string;
}

const heldOutKey = (key: string) => Number.parseInt(createHash('sha256').update(key).digest('hex').slice(0, 8), 16) % 3 === 0;

function phoneLabel(x: PlaceRecord, y: PlaceRecord, heldOut: boolean, origin: string): Labelled | null {
  if (!x.phone || !y.phone_e164) return null;
  const value = x.phone_e164 ?? x.phone;
  const facts = phoneFacts(value, x.country_code);
  const features = phoneFeatures({ valid: facts.valid, type: facts.type, sources: [x.source] }, x.country_code, facts.country);
  return { kind: 'phone', features, correct: x.phone_e164 === y.phone_e164, heldOut, origin };
}

function websiteLabel(x: PlaceRecord, y: PlaceRecord, heldOut: boolean, origin: string): Labelled | null {
  if (!x.website || !y.website) return null;
  const mine = registrableDomain(x.website);
  const theirs = registrableDomain(y.website);
  if (theirs === null) return null;
  const features = websiteFeatures({ value: x.website, status: 'unknown', final_domain: null, sources: [x.source] });
  return { kind: 'website', features, correct: mine !== null && mine === theirs, heldOut, origin };
}

function emailLabel(x: PlaceRecord, y: PlaceRecord, heldOut: boolean, origin: string): Labelled | null {
  if (!x.email || !y.email) return null;
  const facts = emailFacts(x.email, x.website);
  const evidence = {
    value: x.email,
    status: facts.syntax ? ('unknown' as const) : ('invalid' as const),
    role: facts.role,
    disposable: facts.disposable,
    free_provider: facts.free_provider,
    own_domain: facts.own_domain,
    sources: [x.source],
  };
  return { kind: 'email', features: emailFeatures(evidence), correct: x.email.toLowerCase() === y.email.toLowerCase(), heldOut, origin };
}

function pairLabels(a: PlaceRecord, b: PlaceRecord, origin: string): Labelled[] {
  const heldOut = heldOutKey([`${a.source}:${a.source_id}`, `${b.source}:${b.source_id}`].sort().join('|'));
  return [
    phoneLabel(a, b, heldOut, origin),
    phoneLabel(b, a, heldOut, origin),
    websiteLabel(a, b, heldOut, origin),
    websiteLabel(b, a, heldOut, origin),
    emailLabel(a, b, heldOut, origin),
    emailLabel(b, a, heldOut, origin),
  ].filter((l): l is Labelled => l !== null);
}

/** The hand-judged same-business pairs of test/fixtures/conflation. */
async function judgedPairs(records: Map<string, Map<string, PlaceRecord>>): Promise<Array<[PlaceRecord, PlaceRecord]>> {
  const lines = readFileSync(resolve(import.meta.dirname, '../test/fixtures/conflation/judged-pairs.csv'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .slice(1)
    .map((l) => l.split(','));
  const same = lines.filter((f) => f[4] === '1');
  const wanted = new Map<string, Set<string>>();
  for (const f of same)
    for (const [s, id] of [[f[0]!, f[1]!] as const, [f[2]!, f[3]!] as const]) {
      if (!wanted.has(s)) wanted.set(s, new Set());
      wanted.get(s)!.add(id);
    }
  for (const [source, ids] of wanted) {
    const have = records.get(source) ?? new Map();
    const missing = new Set([...ids].filter((id) => !have.has(id)));
    if (missing.size > 0) for (const [id, r] of await readSampleSource(source, missing)) have.set(id, r);
    records.set(source, have);
  }
  const out: Array<[PlaceRecord, PlaceRecord]> = [];
  for (const f of same) {
    const a = records.get(f[0]!)?.get(f[1]!);
    const b = records.get(f[2]!)?.get(f[3]!);
    if (a && b) out.push([a, b]);
  }
  return out;
}

/** Pairs the conflation matcher makes between `left`'s records and the nearest records of `right` (the best match within 300 m). */
function matchedPairs(left: Iterable<PlaceRecord>, right: PlaceRecord[]): Array<[PlaceRecord, PlaceRecord]> {
  const located = right.filter((r) => r.lat !== null && r.lon !== null);
  const index = new KDBush(located.length);
  for (const r of located) index.add(r.lon!, r.lat!);
  index.finish();
  const out: Array<[PlaceRecord, PlaceRecord]> = [];
  for (const a of left) {
    if (a.lat === null || a.lon === null) continue;
    const d = 0.003;
    let best: { b: PlaceRecord; score: number } | null = null;
    for (const i of index.range(
      a.lon - d / Math.cos((a.lat * Math.PI) / 180),
      a.lat - d,
      a.lon + d / Math.cos((a.lat * Math.PI) / 180),
      a.lat + d,
    )) {
      const b = located[i]!;
      const decision = matchPlaces(a, b);
      if (decision.match && (best === null || decision.score > best.score)) best = { b, score: decision.score };
    }
    if (best) out.push([a, best.b]);
  }
  return out;
}

/** Addresses a plain pattern finds in the saved pages, judged by the page's hashes. */
function pageEmailLabels(): Labelled[] {
  const out: Labelled[] = [];
  const seen = new Set<string>();
  const pattern = /[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}/gi;
  for (const page of loadLabelledSet()) {
    for (const m of page.html.matchAll(pattern)) {
      const address = m[0].replace(/^mailto:/i, '').toLowerCase();
      const key = `${page.site}|${address}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const facts = emailFacts(address, `http://${page.siteDomain}/`);
      const evidence = {
        value: address,
        status: facts.syntax ? ('unknown' as const) : ('invalid' as const),
        role: facts.role,
        disposable: facts.disposable,
        free_provider: facts.free_provider,
        own_domain: facts.own_domain,
        sources: ['website'],
      };
      out.push({
        kind: 'email',
        features: emailFeatures(evidence),
        correct: page.emailHashes.has(sha256(address)),
        heldOut: page.heldOut,
        origin: 'pages',
      });
    }
  }
  return out;
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/**
 * Logistic regression by Newton's method (IRLS) with a small ridge (λ) on the coefficients, not the intercept:
 * features no training value has stay at 0 and the fit converges when a feature separates the classes.
 */
function fit(rows: Labelled[], names: string[], lambda = 1): LogisticModel {
  const k = names.length + 1;
  let w = new Array<number>(k).fill(0);
  const x = rows.map((r) => [1, ...names.map((n) => r.features[n] ?? 0)]);
  const y = rows.map((r) => (r.correct ? 1 : 0));
  for (let iter = 0; iter < 50; iter++) {
    const grad = new Array<number>(k).fill(0);
    const hess = Array.from({ length: k }, () => new Array<number>(k).fill(0));
    for (let i = 0; i < rows.length; i++) {
      const p = sigmoid(x[i]!.reduce((s, v, j) => s + v * w[j]!, 0));
      for (let j = 0; j < k; j++) {
        grad[j]! += (y[i]! - p) * x[i]![j]!;
        for (let l = 0; l < k; l++) hess[j]![l]! += p * (1 - p) * x[i]![j]! * x[i]![l]!;
      }
    }
    for (let j = 1; j < k; j++) {
      grad[j]! -= lambda * w[j]!;
      hess[j]![j]! += lambda;
    }
    hess[0]![0]! += 1e-6;
    const step = solve(hess, grad);
    w = w.map((v, j) => v + step[j]!);
    if (Math.max(...step.map(Math.abs)) < 1e-8) break;
  }
  const coefficients: Record<string, number> = {};
  names.forEach((n, j) => {
    if (rows.some((r) => (r.features[n] ?? 0) !== 0)) coefficients[n] = Math.round(w[j + 1]! * 1000) / 1000;
  });
  return { intercept: Math.round(w[0]! * 1000) / 1000, coefficients };
}

/** Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    [m[c], m[p]] = [m[p]!, m[c]!];
    const pivot = m[c]![c]! || 1e-12;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / pivot;
      for (let j = c; j <= n; j++) m[r]![j]! -= f * m[c]![j]!;
    }
  }
  return m.map((row, i) => row[n]! / (m[i]![i]! || 1e-12));
}

function confidence(model: LogisticModel, features: Record<string, number>): number {
  let z = model.intercept;
  for (const [n, v] of Object.entries(features)) z += (model.coefficients[n] ?? 0) * v;
  return sigmoid(z);
}

/** Deciles of confidence: values, mean confidence, share right, and whether the two are within ±5 points. */
function reliability(model: LogisticModel, rows: Labelled[]): string[] {
  const lines = ['| decile | values | mean confidence | share right | within ±5 points |', '| --- | ---: | ---: | ---: | --- |'];
  for (let d = 0; d < 10; d++) {
    const inside = rows.filter((r) => {
      const c = confidence(model, r.features);
      return c >= d / 10 && (c < (d + 1) / 10 || (d === 9 && c <= 1));
    });
    if (inside.length === 0) continue;
    const mean = inside.reduce((s, r) => s + confidence(model, r.features), 0) / inside.length;
    const right = inside.filter((r) => r.correct).length / inside.length;
    const ok = Math.abs(mean - right) <= 0.05;
    const thin = inside.length < 30 ? ' (thin: under 30 values)' : '';
    lines.push(
      `| ${(d / 10).toFixed(1)}–${((d + 1) / 10).toFixed(1)} | ${inside.length} | ${mean.toFixed(3)} | ${right.toFixed(3)} | ${ok ? 'yes' : 'no'}${thin} |`,
    );
  }
  return lines;
}

const featureNames: Record<ValueKind, string[]> = {
  email: ['invalid', 'role', 'free_provider', 'disposable', 'own_domain'],
  phone: ['invalid', 'mobile', 'toll_free', 'premium_rate', 'voip', 'untyped', 'foreign'],
  website: ['platform', 'deep_path'],
};

async function main(): Promise<void> {
  const write = process.argv.includes('--write');
  const started = performance.now();
  const records = new Map<string, Map<string, PlaceRecord>>();
  const labelled: Labelled[] = [];
  for (const [a, b] of await judgedPairs(records)) labelled.push(...pairLabels(a, b, 'judged pairs'));
  sampleFiles.foursquare = { file: 'places/fsq-os-places-sample-10k-2024-11-19.csv.gz', format: 'foursquare-csv' };
  const read = new Map<string, PlaceRecord[]>();
  const all = async (source: string) => {
    if (!read.has(source)) read.set(source, [...(await readSampleSource(source)).values()]);
    return read.get(source)!;
  };
  for (const [left, right] of [
    ['michelin', 'osm'],
    ['michelin', 'yelp'],
    ['michelin', 'gmaps'],
    ['foursquare', 'osm'],
    ['foursquare', 'yelp'],
    ['foursquare', 'overture'],
    ['foursquare', 'michelin'],
  ] as const) {
    for (const [a, b] of matchedPairs(await all(left), await all(right)))
      labelled.push(...pairLabels(a, b, `${left} × ${right} (matcher)`));
  }
  labelled.push(...pageEmailLabels());

  const model: TrustModel = { ...trustModel, kinds: { ...trustModel.kinds } };
  const out: string[] = [];
  for (const kind of ['phone', 'website', 'email'] as const) {
    const all = labelled.filter((l) => l.kind === kind);
    const train = all.filter((l) => !l.heldOut);
    const held = all.filter((l) => l.heldOut);
    const fitted = fit(train, featureNames[kind]);
    // What the data cannot teach (statuses no labelled value has, agreement of sources) keeps the file's value.
    const kept = Object.fromEntries(Object.entries(trustModel.kinds[kind].coefficients).filter(([n]) => !(n in fitted.coefficients)));
    model.kinds[kind] = { intercept: fitted.intercept, coefficients: { ...kept, ...fitted.coefficients } };
    const origins = [...new Set(all.map((l) => l.origin))].map((o) => `${o}: ${all.filter((l) => l.origin === o).length}`).join(', ');
    out.push(
      `## ${kind}: ${all.length} labelled values (${origins}); ${train.length} to fit, ${held.length} held out; right ${((100 * all.filter((l) => l.correct).length) / Math.max(1, all.length)).toFixed(1)} %`,
      '',
      `fitted: intercept ${fitted.intercept}, ${Object.entries(fitted.coefficients)
        .map(([n, c]) => `${n} ${c}`)
        .join(', ')}`,
      '',
      ...reliability(model.kinds[kind], held),
      '',
    );
  }
  console.log(out.join('\n'));
  console.log(`built and fitted in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (write) {
    const body = JSON.stringify(model.kinds);
    const version = `${new Date().toISOString().slice(0, 10)}.${createHash('sha256').update(body).digest('hex').slice(0, 8)}`;
    const file = {
      version,
      note: 'Fitted by bench/trust-calibration.ts --write (docs/trust.md). Coefficients no labelled value could fit (statuses, agreement) are the documented assumptions of docs/trust.md.',
      kinds: model.kinds,
    };
    writeFileSync(resolve(import.meta.dirname, '../models/trust-model.json'), `${JSON.stringify(file, null, 2)}\n`);
    console.log(`models/trust-model.json written, version ${version}`);
  }
}

await main();
