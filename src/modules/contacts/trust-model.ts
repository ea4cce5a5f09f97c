import { readFileSync } from 'node:fs';
import type { EmailTrust, PhoneTrust, WebsiteTrust } from './trust.types.ts';

/**
 * The confidence model (docs/trust.md): per kind of value, a logistic model over a few features of its
 * evidence, `confidence = 1 / (1 + exp(-(intercept + Σ coefficient × feature)))`, its coefficients fitted
 * by `bench/trust-calibration.ts` and kept in one versioned file, `models/trust-model.json`. A feature the
 * file has no coefficient for counts zero.
 */

export type ValueKind = 'email' | 'phone' | 'website';

export interface LogisticModel {
  intercept: number;
  coefficients: Record<string, number>;
}

export interface TrustModel {
  /** Changes whenever a coefficient does: the trust pass recomputes every place for a new version. */
  version: string;
  kinds: Record<ValueKind, LogisticModel>;
}

/** The model of the repository (`models/trust-model.json`), read once. */
export const trustModel: TrustModel = JSON.parse(
  readFileSync(new URL('../../../models/trust-model.json', import.meta.url), 'utf8'),
) as TrustModel;

/** More sources than this add nothing more. */
const MAX_EXTRA_SOURCES = 3;

type Evidence<T> = Omit<T, 'confidence' | 'first_seen_at' | 'last_seen_at' | 'checked_at'>;

const extraSources = (sources: string[]) => Math.min(MAX_EXTRA_SOURCES, Math.max(0, sources.length - 1));
const onWebsite = (sources: string[]) => (sources.includes('website') ? 1 : 0);
const flag = (b: boolean) => (b ? 1 : 0);

/** The features of an email: its domain's status (`unknown` is the baseline), what the address is, who gives it. */
export function emailFeatures(e: Evidence<EmailTrust>): Record<string, number> {
  return {
    valid_domain: flag(e.status === 'valid_domain'),
    no_mx: flag(e.status === 'no_mx'),
    invalid: flag(e.status === 'invalid'),
    role: flag(e.role),
    free_provider: flag(e.free_provider),
    disposable: flag(e.disposable),
    own_domain: flag(e.own_domain),
    extra_sources: extraSources(e.sources),
    on_website: onWebsite(e.sources),
  };
}

/** The features of a phone: validity and type (`fixed_line` is the baseline), its country, who gives it. */
export function phoneFeatures(p: Evidence<PhoneTrust>, placeCountry: string | null, numberCountry: string | null): Record<string, number> {
  return {
    invalid: flag(!p.valid),
    mobile: flag(p.valid && p.type === 'mobile'),
    toll_free: flag(p.valid && p.type === 'toll_free'),
    premium_rate: flag(p.valid && p.type === 'premium_rate'),
    voip: flag(p.valid && p.type === 'voip'),
    untyped: flag(p.valid && p.type === 'unknown'),
    foreign: flag(p.valid && placeCountry !== null && numberCountry !== null && placeCountry !== numberCountry),
    extra_sources: extraSources(p.sources),
    on_website: onWebsite(p.sources),
  };
}

/** The features of a website: the status of its last fetch (`unknown`, never fetched, is the baseline), who gives it. */
export function websiteFeatures(w: Evidence<WebsiteTrust>): Record<string, number> {
  return {
    live: flag(w.status === 'live'),
    redirected: flag(w.status === 'redirected'),
    parked: flag(w.status === 'parked'),
    dead: flag(w.status === 'dead'),
    extra_sources: extraSources(w.sources),
  };
}

/** The model's probability for a value of `kind` with these features, rounded to three places. */
export function confidenceOf(model: TrustModel, kind: ValueKind, features: Record<string, number>): number {
  const m = model.kinds[kind];
  let z = m.intercept;
  for (const [name, x] of Object.entries(features)) z += (m.coefficients[name] ?? 0) * x;
  return Math.round(1000 / (1 + Math.exp(-z))) / 1000;
}

/**
 * How reachable a place is: the probability that at least one of its best email, best phone and website is
 * right, taking the three as independent (each confidence is calibrated on its own), and 0 for a place
 * closed or retired. A place without contacts scores 0.
 */
export function leadScoreOf(best: ReadonlyArray<number | null>, open: boolean): number {
  if (!open) return 0;
  let none = 1;
  for (const c of best) if (c !== null) none *= 1 - c;
  return Math.round(1000 * (1 - none)) / 1000;
}
