/**
 * Fits the confidence model of issue #33 (docs/trust.md) and prints its reliability on held-out values.
 *
 *   node --import tsx bench/trust-calibration.ts            # fit on the training part, print the held-out reliability tables
 *   node --import tsx bench/trust-calibration.ts --write    # and write models/trust-model.json
 *
 * The labelled set (bench/lib/trust-labels.ts) is built from real data in ../shared/data, read at run time and
 * never copied: values two sources give for one business (hand-judged pairs, and pairs the conflation matcher
 * makes with the judged value hidden from it), and the phones and emails the enrichment's extractor finds on
 * the hand-labelled saved pages. A third of the businesses is held out (no business on both sides); the model is
 * fitted on the rest and judged on them, next to the model file's current coefficients. Then each third is scored
 * by the model fitted on the other two and the three are pooled, so that a decile holds every labelled value.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type LogisticModel, type TrustModel, trustModel, type ValueKind } from '../src/modules/contacts/trust-model.ts';
import { type Labelled, pageLabels, pairLabels, splitByBusiness } from './lib/trust-labels.ts';

/** Held-out values a kind needs before its new fit may replace the file's (the reliability tables' threshold of a decile too). */
const MIN_HELD_OUT = 30;

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/**
 * Logistic regression by Newton's method (IRLS) with a ridge (λ) that pulls each coefficient, not the intercept,
 * toward its `prior` (the model file's value): a feature few training values have stays near its documented
 * assumption instead of being pulled to 0, and the fit converges when a feature separates the classes.
 */
function fit(rows: Labelled[], names: string[], prior: Record<string, number>, lambda = 1): LogisticModel {
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
      grad[j]! -= lambda * (w[j]! - (prior[names[j - 1]!] ?? 0));
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

/** Wilson's 95 % interval of a share of `n` values: how far the true share may be from the one measured. */
function wilson(share: number, n: number): [number, number] {
  const z = 1.96;
  const centre = (share + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((share * (1 - share)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/**
 * Deciles of confidence: values, mean confidence, share right (with its 95 % interval), and whether the two are
 * within ±5 points.
 */
function reliability(model: LogisticModel, rows: Labelled[]): string[] {
  return reliabilityOf(rows.map((r) => ({ confidence: confidence(model, r.features), correct: r.correct })));
}

interface Scored {
  confidence: number;
  correct: boolean;
}

function reliabilityOf(rows: Scored[]): string[] {
  const lines = [
    '| decile | values | mean confidence | share right | 95 % interval | within ±5 points |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
  ];
  for (let d = 0; d < 10; d++) {
    const inside = rows.filter((r) => Math.min(9, Math.floor(r.confidence * 10)) === d);
    if (inside.length === 0) continue;
    const mean = inside.reduce((s, r) => s + r.confidence, 0) / inside.length;
    const right = inside.filter((r) => r.correct).length / inside.length;
    const [low, high] = wilson(right, inside.length);
    const ok = Math.abs(mean - right) <= 0.05;
    const thin = inside.length < MIN_HELD_OUT ? ` (thin: under ${MIN_HELD_OUT} values)` : '';
    lines.push(
      `| ${(d / 10).toFixed(1)}–${((d + 1) / 10).toFixed(1)} | ${inside.length} | ${mean.toFixed(3)} | ${right.toFixed(3)} | ${low.toFixed(2)}–${high.toFixed(2)} | ${ok ? 'yes' : 'no'}${thin} |`,
    );
  }
  return lines;
}

/**
 * How well a model's confidences fit the held-out labels: log loss and Brier score (lower is better), and the
 * expected calibration error (the deciles' gaps between mean confidence and share right, weighted by values).
 */
function heldOutScores(model: LogisticModel, rows: Labelled[]): { logLoss: number; brier: number; ece: number } {
  if (rows.length === 0) return { logLoss: Number.NaN, brier: Number.NaN, ece: Number.NaN };
  let logLoss = 0;
  let brier = 0;
  const deciles = Array.from({ length: 10 }, () => ({ n: 0, conf: 0, right: 0 }));
  for (const r of rows) {
    const c = Math.min(1 - 1e-9, Math.max(1e-9, confidence(model, r.features)));
    const y = r.correct ? 1 : 0;
    logLoss -= y * Math.log(c) + (1 - y) * Math.log(1 - c);
    brier += (c - y) ** 2;
    const d = deciles[Math.min(9, Math.floor(c * 10))]!;
    d.n++;
    d.conf += c;
    d.right += y;
  }
  const ece = deciles.reduce((s, d) => s + (d.n === 0 ? 0 : Math.abs(d.conf - d.right)), 0) / rows.length;
  return { logLoss: logLoss / rows.length, brier: brier / rows.length, ece };
}

const scoreLine = (label: string, s: ReturnType<typeof heldOutScores>) =>
  `${label}: log loss ${s.logLoss.toFixed(3)}, Brier ${s.brier.toFixed(3)}, calibration error ${s.ece.toFixed(3)}`;

/**
 * The documented assumptions (docs/trust.md) each coefficient starts from: what no labelled value can teach
 * (statuses nothing here checks, agreement of sources, which is the label) stays at them, and a feature few
 * values have stays near them. Fixed here rather than read from the model file, so that a fit does not drift
 * with each `--write`.
 */
const PRIOR: Record<ValueKind, Record<string, number>> = {
  email: { valid_domain: 1.2, no_mx: -2.5, invalid: -4, disposable: -3, extra_sources: 0.8, on_website: 0.5 },
  phone: { invalid: -3.5, mobile: -0.2, toll_free: 0.2, premium_rate: -1, voip: -0.3, extra_sources: 0.8, on_website: 0.5 },
  website: { live: 1.2, redirected: 0.3, parked: -3.5, dead: -3, extra_sources: 0.8 },
};

const featureNames: Record<ValueKind, string[]> = {
  email: ['invalid', 'role', 'free_provider', 'disposable', 'own_domain', 'on_website'],
  phone: ['invalid', 'mobile', 'toll_free', 'premium_rate', 'voip', 'untyped', 'foreign', 'on_website'],
  website: ['platform', 'deep_path'],
};

/** A fitted model completed with the assumptions of the features no labelled value has. */
function withAssumptions(kind: ValueKind, fitted: LogisticModel): LogisticModel {
  const kept = Object.fromEntries(Object.entries(PRIOR[kind]).filter(([n]) => !(n in fitted.coefficients)));
  return { intercept: fitted.intercept, coefficients: { ...kept, ...fitted.coefficients } };
}

/**
 * Each third scored by the model refitted on the other two: per third, its deciles of enough values (mean
 * confidence against share right), then every value's out-of-third confidence pooled in one reliability table.
 */
function foldLines(kind: ValueKind, all: Labelled[]): string[] {
  const pooled: Scored[] = [];
  const lines = [0, 1, 2].map((fold) => {
    const model = withAssumptions(
      kind,
      fit(
        all.filter((l) => l.fold !== fold),
        featureNames[kind],
        PRIOR[kind],
      ),
    );
    const held = all.filter((l) => l.fold === fold).map((l) => ({ confidence: confidence(model, l.features), correct: l.correct }));
    pooled.push(...held);
    const deciles = [...Array(10).keys()].flatMap((d) => {
      const inside = held.filter((l) => Math.min(9, Math.floor(l.confidence * 10)) === d);
      if (inside.length < MIN_HELD_OUT) return [];
      const mean = inside.reduce((s, l) => s + l.confidence, 0) / inside.length;
      const right = inside.filter((l) => l.correct).length / inside.length;
      return [`${(d / 10).toFixed(1)}: ${inside.length} values, ${mean.toFixed(3)} said, ${right.toFixed(3)} right`];
    });
    return `${kind}, fold ${fold} (${held.length} values): ${deciles.length > 0 ? deciles.join('; ') : 'no decile of 30 values'}`;
  });
  return [...lines, '', `${kind}, every value scored by the model fitted without its third:`, '', ...reliabilityOf(pooled), ''];
}

async function main(): Promise<void> {
  const write = process.argv.includes('--write');
  const started = performance.now();
  const { labels: labelled, counts } = await pairLabels();
  labelled.push(...pageLabels());
  splitByBusiness(labelled);
  console.log('pairs the matcher made, per kind hidden (before duplicates and judged negatives were removed):');
  for (const [origin, n] of Object.entries(counts.pairs))
    console.log(`  ${origin}: phone ${n.phone}, website ${n.website}, email ${n.email}`);
  console.log('');

  const model: TrustModel = { ...trustModel, kinds: { ...trustModel.kinds } };
  const out: string[] = [];
  for (const kind of ['phone', 'website', 'email'] as const) {
    const all = labelled.filter((l) => l.kind === kind);
    const train = all.filter((l) => !l.heldOut);
    const held = all.filter((l) => l.heldOut);
    const fitted = fit(train, featureNames[kind], PRIOR[kind]);
    const candidate = withAssumptions(kind, fitted);
    const [mine, theirs] = [heldOutScores(candidate, held), heldOutScores(trustModel.kinds[kind], held)];
    // The new fit replaces the file's only where the held-out part can tell them apart and prefers it.
    const better = held.length >= MIN_HELD_OUT && mine.logLoss < theirs.logLoss && mine.brier < theirs.brier;
    if (better) model.kinds[kind] = candidate;
    const origins = [...new Set(all.map((l) => l.origin))].map((o) => `${o}: ${all.filter((l) => l.origin === o).length}`).join(', ');
    const perDecile = [...Array(10).keys()]
      .map((d) => {
        const inside = all.filter((l) => Math.min(9, Math.floor(confidence(model.kinds[kind], l.features) * 10)) === d);
        return inside.length === 0 ? null : `${(d / 10).toFixed(1)}: ${inside.length} (${inside.filter((l) => l.heldOut).length} held out)`;
      })
      .filter((x) => x !== null)
      .join(', ');
    out.push(
      `## ${kind}: ${all.length} labelled values (${origins}); ${train.length} to fit, ${held.length} held out; right ${((100 * all.filter((l) => l.correct).length) / Math.max(1, all.length)).toFixed(1)} %`,
      '',
      `fitted: intercept ${fitted.intercept}, ${Object.entries(fitted.coefficients)
        .map(([n, c]) => `${n} ${c} (${train.filter((l) => (l.features[n] ?? 0) !== 0).length} values)`)
        .join(', ')}`,
      '',
      scoreLine('held out, new fit', mine),
      scoreLine('held out, model file', theirs),
      better
        ? 'the new fit is kept (--write writes it)'
        : `the model file's coefficients are kept (${held.length < MIN_HELD_OUT ? `under ${MIN_HELD_OUT} held-out values` : 'the new fit is no better on the held-out part'})`,
      `every labelled value by decile of the model kept: ${perDecile}`,
      ...[...new Set(held.map((l) => l.origin))].map((o) => {
        const part = held.filter((l) => l.origin === o);
        const mean = part.reduce((s, l) => s + confidence(model.kinds[kind], l.features), 0) / part.length;
        const right = part.filter((l) => l.correct).length / part.length;
        return `held out from ${o}: ${part.length} values, mean confidence ${mean.toFixed(3)}, share right ${right.toFixed(3)}`;
      }),
      '',
      'new fit:',
      '',
      ...reliability(candidate, held),
      '',
      `model file (${trustModel.version}):`,
      '',
      ...reliability(trustModel.kinds[kind], held),
      '',
    );
  }
  out.push(
    '## every third held out once (the model refitted on the other two; deciles of 30 values or more)',
    '',
    ...(['phone', 'website', 'email'] as const).flatMap((kind) =>
      foldLines(
        kind,
        labelled.filter((l) => l.kind === kind),
      ),
    ),
    '',
  );
  console.log(out.join('\n'));
  console.log(`built and fitted in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const changed = JSON.stringify(model.kinds) !== JSON.stringify(trustModel.kinds);
  if (write && !changed) console.log('models/trust-model.json not written: no new fit is better than its coefficients');
  if (write && changed) {
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
