import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createAccountWithToken, type TestAccount } from '../../../test/helpers/accounts.ts';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { emailStatuses, phoneTypes, websiteStatuses } from '../contacts/trust.types.ts';
import { refreshTrust } from '../trust/trust.service.ts';

const data = new URL('../../../../shared/data/', import.meta.url);
const monaco = new URL('osm/monaco-2026.osm.pbf', data).pathname;

/**
 * The trust filters through `GET /api/v2/map/search` on a server as it runs (its trust pass, its engine): the
 * issue's question ("a valid email domain and a mobile phone, confidence ≥ 0.8") answered as the trust pass's
 * summary says, `sort=lead_score`, and every bad value a 400 naming the field and what it allows. The engine
 * against SQL and the two dialects are compared in test/parity/trust-filters.test.ts.
 */
describe('search by trust in contacts (SQLite)', () => {
  let t: TestApp;
  let user: TestAccount;

  before(async () => {
    // The trust pass by the test (not the server's loop beside it): the first search below finds it caught up or
    // runs the rest itself.
    t = await buildTestApp({ dialect: 'sqlite', files: [monaco], env: { TRUST_POLL_MS: '0' } });
    await refreshTrust(t.db);
    user = await createAccountWithToken(t.db, { scopes: ['search'] });
  });
  after(async () => {
    await t?.close();
  });

  const get = (query: string) =>
    t.app.inject({ method: 'GET', url: `/api/v2/map/search?${query}`, headers: { authorization: user.authorization } });

  async function total(where: string): Promise<number> {
    const { rows } = await sql<{
      n: number;
    }>`SELECT count(*) AS n FROM places WHERE closed_at IS NULL AND merged_into IS NULL AND country_code = 'MC' AND ${sql.raw(where)}`.execute(
      t.db.kysely,
    );
    return Number(rows[0]!.n);
  }

  test('finds the places whose best email has a valid domain and whose best phone is a mobile, both at confidence 0.8 or more', async () => {
    // The server starts behind the import: the first search with a trust filter runs the trust pass and waits for
    // it within its budget; a pass longer than that is a 503 with Retry-After, and the answer comes once it ends.
    const query = 'country=MC&email_status=valid_domain&phone_type=fixed_line&min_confidence=0.5&per_page=100';
    let res = await get(query);
    for (const started = Date.now(); res.statusCode === 503 && Date.now() - started < 60_000; res = await get(query)) {
      assert.equal((res.json() as { code: string }).code, 'not_ready');
      assert.ok(Number(res.headers['retry-after']) >= 1);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { total: number; data: Array<{ id: string }> };
    const expected = await total(
      "email_status = 'valid_domain' AND email_confidence >= 0.5 AND phone_type = 'fixed_line' AND phone_confidence >= 0.5",
    );
    assert.equal(body.total, expected);
    const mobile = await get('country=MC&email_status=valid_domain&phone_type=mobile&min_confidence=0.8');
    assert.equal(mobile.statusCode, 200, mobile.body);
    assert.equal(
      (mobile.json() as { total: number }).total,
      await total("email_status = 'valid_domain' AND email_confidence >= 0.8 AND phone_type = 'mobile' AND phone_confidence >= 0.8"),
    );
    // The pass has judged every place: each one has a lead score, so the filter is not empty by accident.
    assert.equal(await total('lead_score IS NULL AND merged_into IS NULL'), 0);
    assert.ok((await total("phone_type = 'fixed_line'")) > 10, 'Monaco has fixed lines');
  });

  test('has_email=true with min_confidence narrows to the confident emails; min_lead_score, the dates and sort=lead_score', async () => {
    const withEmail = (await get('country=MC&has_email=true')).json() as { total: number };
    const confident = (await get('country=MC&has_email=true&min_confidence=0.6')).json() as { total: number };
    assert.ok(withEmail.total > 0);
    assert.equal(
      confident.total,
      await total(
        "email_confidence >= 0.6 AND ((email IS NOT NULL AND email != '') OR (found_email IS NOT NULL AND enrich_basis = coalesce(website, email)))",
      ),
    );
    assert.ok(confident.total <= withEmail.total);
    const scored = await get('country=MC&min_lead_score=0.3&sort=lead_score&per_page=50&fields=name,lead_score');
    assert.equal(scored.statusCode, 200, scored.body);
    const page = scored.json() as { total: number; sort: string; data: Array<{ lead_score: number }> };
    assert.equal(page.total, await total('lead_score >= 0.3'));
    assert.equal(page.sort, 'lead_score');
    const scores = page.data.map((p) => p.lead_score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
    );
    assert.ok(scores.every((s) => s >= 0.3));
    const all = ((await get('country=MC')).json() as { total: number }).total;
    assert.equal(((await get('country=MC&updated_since=2000-01-01')).json() as { total: number }).total, all);
    assert.equal(((await get('country=MC&updated_since=2999-01-01T00:00:00Z')).json() as { total: number }).total, 0);
    const verified = await get('country=MC&verified_since=2000-01-01T00:00');
    assert.equal(verified.statusCode, 200, verified.body);
    assert.equal((verified.json() as { total: number }).total, await total("verified_at >= '2000-01-01T00:00:00.000Z'"));
  });

  test('answers 400 naming the field and the values it allows', async () => {
    const cases: Array<[string, string, unknown]> = [
      ['country=MC&email_status=deliverable', 'querystring.email_status', [...emailStatuses]],
      ['country=MC&phone_type=landline', 'querystring.phone_type', [...phoneTypes]],
      ['country=MC&website_status=up', 'querystring.website_status', [...websiteStatuses]],
      ['country=MC&sort=score', 'querystring.sort', undefined],
      ['country=MC&min_confidence=0.8', 'querystring.min_confidence', undefined],
      ['country=MC&has_email=false&min_confidence=0.8', 'querystring.min_confidence', undefined],
      ['country=MC&has_email=true&min_confidence=1.5', 'querystring.min_confidence', undefined],
      ['country=MC&min_lead_score=-1', 'querystring.min_lead_score', undefined],
      ['country=MC&updated_since=yesterday', 'querystring.updated_since', undefined],
      ['country=MC&verified_since=2026-02-31', 'querystring.verified_since', undefined],
    ];
    for (const [query, field, allowed] of cases) {
      const res = await get(query);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      const body = res.json() as { errors: Array<{ field: string; allowed?: unknown }> };
      const error = body.errors.find((e) => e.field === field);
      assert.ok(error, `${query}: ${res.body}`);
      if (allowed) assert.deepEqual(error.allowed, allowed, query);
      if (field === 'querystring.min_confidence' && query.includes('0.8'))
        assert.deepEqual(error.allowed, [
          'has_email=true',
          'has_phone=true',
          'has_website=true',
          'email_status',
          'phone_type',
          'website_status',
        ]);
    }
  });
});
