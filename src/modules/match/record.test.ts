import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addressForm } from '../conflation/address.ts';
import { loadLegalForms } from './legal-forms.ts';
import type { CandidateRow } from './match.repository.ts';
import { addressCities, recordNameForms } from './record.ts';
import { confirmationFactor, preparePlace, scoreCandidate } from './scoring.ts';

const legalForms = loadLegalForms();

describe('how a record of a list is read', () => {
  test('takes the legal forms of its country off the name, a form joined to its parent in one step', () => {
    assert.equal(legalForms.strip('Müller GmbH & Co. KG', 'DE'), 'muller');
    assert.equal(legalForms.strip('Bäckerei Huber e.K.', 'DE'), 'backerei huber');
    assert.equal(legalForms.strip('Huber Ges.m.b.H.', 'AT'), 'huber');
    assert.equal(legalForms.strip('GmbH', 'DE'), 'gmbh', 'a name that is only a legal form stays');
  });

  test('uses every country of the list when the country is unknown', () => {
    assert.equal(legalForms.strip('Stadtwerke AG', null), 'stadtwerke');
  });

  test('spells German names without umlauts as folding spells them with', () => {
    const forms = recordNameForms('Mueller Baeckerei GmbH', 'DE', legalForms);
    assert.ok(
      forms.some((f) => f.joined === 'mullerbackerei'),
      JSON.stringify(forms),
    );
  });

  test('reads the city off the end of a one-line address, postcode aside', () => {
    assert.deepEqual(addressCities('Hotterstr. 12, 80331 München'), ['München']);
    assert.deepEqual(addressCities('Annankatu 1 Helsinki'), ['Annankatu Helsinki', 'Helsinki']);
    assert.deepEqual(addressCities('Rua das Flores 5'), ['das Flores', 'Flores']);
  });

  test('compares abbreviated street names with their compounds', () => {
    const a = addressForm({ street: 'Hotterstr.', housenumber: '12', address: null });
    const b = addressForm({ street: 'Hotterstraße', housenumber: '12', address: null });
    assert.deepEqual(a?.street, b?.street);
  });
});

describe('the score of a candidate', () => {
  const row = (over: Partial<CandidateRow>): CandidateRow =>
    ({
      id: 1,
      public_id: 'plc_aaaaaaaaaaaaaaaa',
      name: 'Ratskeller',
      names: null,
      category: 'restaurant',
      categories: '["restaurant"]',
      phone: null,
      phone_e164: '+49892199890',
      website: null,
      website_domain: 'ratskeller.com',
      email: null,
      street: 'Marienplatz',
      housenumber: '8',
      address: null,
      postcode: '80331',
      city: 'München',
      city_id: 2867714,
      country_code: 'DE',
      lat: 48.1374,
      lon: 11.5755,
      ...over,
    }) as CandidateRow;
  const record = {
    forms: recordNameForms('Ratskeller GmbH', 'DE', legalForms),
    country: 'DE',
    phone: null,
    domain: null,
    address: addressForm({ street: 'Marienpl.', housenumber: '8', address: null }),
    point: null,
    city: null,
  };

  test('rises with each field that agrees and never reaches 1', () => {
    assert.ok(confirmationFactor(0.5) === 0.5 && confirmationFactor(2) < 1 && confirmationFactor(1.2) > confirmationFactor(1));
    const same = scoreCandidate(record, preparePlace(row({}), legalForms));
    assert.equal(same.evidence.address, 'same');
    assert.equal(same.evidence.name, 1);
    const withPhone = scoreCandidate({ ...record, phone: '+49892199890' }, preparePlace(row({}), legalForms));
    assert.ok(withPhone.score > same.score);
  });

  test('puts the business next door (same street, other number) well below', () => {
    const nextDoor = scoreCandidate(record, preparePlace(row({ housenumber: '10' }), legalForms));
    assert.equal(nextDoor.evidence.address, 'different');
    assert.ok(nextDoor.score < 0.5, String(nextDoor.score));
  });

  test('gives a phone that several candidates share no weight', () => {
    const p = preparePlace(row({}), legalForms);
    const alone = scoreCandidate({ ...record, phone: '+49892199890' }, p);
    const shared = scoreCandidate({ ...record, phone: '+49892199890' }, p, { phone: true, website: false });
    assert.ok(shared.score < alone.score);
  });
});
