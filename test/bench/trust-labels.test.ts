import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Labelled, splitByBusiness } from '../../bench/lib/trust-labels.ts';
import { isHeldOut } from '../helpers/contacts-labelled-set.ts';

/** The split of the trust calibration's labelled set (bench/lib/trust-labels.ts, docs/trust.md). */

const label = (business: string[]): Labelled => ({
  kind: 'phone',
  features: {},
  correct: true,
  fold: 0,
  heldOut: false,
  origin: 'test',
  business,
});

test('records linked through any chain of pairs land in one third, so no business is on both sides of the split', () => {
  // Fifty chains of three records (a–b, b–c), each pair a label; the chains' records hash to different thirds alone.
  const labels = Array.from({ length: 50 }, (_, i) => [
    label([`michelin:m${i}`, `osm:n${i}`]),
    label([`yelp:y${i}`, `osm:n${i}`]),
    label([`michelin:m${i}`, `gmaps:g${i}`]),
  ]).flat();
  splitByBusiness(labels);
  for (let i = 0; i < 50; i++) {
    const folds = new Set(labels.slice(3 * i, 3 * i + 3).map((l) => l.fold));
    assert.equal(folds.size, 1, `chain ${i} split across thirds ${[...folds].join(', ')}`);
  }
  const folds = new Set(labels.map((l) => l.fold));
  assert.deepEqual([...folds].sort(), [0, 1, 2], 'the chains spread over the three thirds');
  for (const l of labels) assert.equal(l.heldOut, l.fold === 0);
});

test('a saved site is held out exactly when the contact-extraction bench holds it out', () => {
  const sites = Array.from({ length: 30 }, (_, i) => `site-${i}`);
  const labels = sites.map((site) => label([`site:${site}`]));
  splitByBusiness(labels);
  sites.forEach((site, i) => assert.equal(labels[i]!.heldOut, isHeldOut(site), site));
  assert.ok(labels.some((l) => l.heldOut) && labels.some((l) => !l.heldOut));
});
