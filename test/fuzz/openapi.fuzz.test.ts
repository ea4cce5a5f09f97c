import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.ts';
import type { OpenApiDocument, OpenApiOperation } from '../../src/plugins/openapi.docs.ts';
import type { TestAccount } from '../helpers/accounts.ts';
import type { TestSqlite } from '../helpers/databases.ts';
import { fuzzApp } from '../helpers/fuzz-app.ts';

/**
 * Requests generated from /openapi.json against a server on a real import (Monaco's OpenStreetMap
 * extract), with a token holding every scope: for each operation, its parameters with valid, boundary
 * and invalid values (random and tricky strings, huge numbers, Infinity and NaN, unicode, empty,
 * repeated, unknown), JSON bodies of the right and wrong shapes, and now and then a missing or bad
 * token. No answer may be a 5xx, every 4xx must be problem+json, and every answer must carry the
 * RateLimit fields and the security headers.
 *
 * FUZZ_RUNS (default 5,000) sets the number of requests; FUZZ_SEED replays a run.
 */

const runs = Number(process.env.FUZZ_RUNS ?? 5_000);
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

let t: TestSqlite;
let app: App;
let user: TestAccount;
let operations: Array<{ method: 'GET' | 'POST'; path: string; op: OpenApiOperation }>;
/** Values that mean something to the server: saved search ids, a cursor, names from the data. */
const known: Record<string, string[]> = {};
const statuses = new Map<number, number>();

type Schema = NonNullable<NonNullable<OpenApiOperation['parameters']>[number]['schema']>;

before(async () => {
  ({ t, app, user } = await fuzzApp());
  const doc = (await app.inject('/openapi.json')).json() as OpenApiDocument;
  operations = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase() as 'GET' | 'POST', path, op })),
  );
  const searches = await Promise.all(
    ['type=restaurant&city=Monaco', 'city=Monaco&per_page=2', 'query=cafe', 'bbox=7.40,43.72,7.44,43.76&per_page=1'].map((q) =>
      app
        .inject({ url: `/api/v2/map/search?${q}`, headers: { authorization: user.authorization } })
        .then((r) => r.json() as { search_id: string; links: { next: string | null } }),
    ),
  );
  known.search_id = searches.map((s) => s.search_id);
  known.cursor = searches.flatMap((s) => (s.links.next ? [new URL(s.links.next, 'http://x').searchParams.get('cursor') ?? ''] : []));
  const names = await t.db.kysely.selectFrom('places').select(['name', 'category']).limit(40).execute();
  known.query = names.map((n) => n.name);
  known.type = [...new Set(names.map((n) => n.category).filter((c): c is string => c !== null))];
  known.category = known.type;
  known.city = ['Monaco', 'Monte-Carlo', 'Monaco-Ville', 'München', 'Paris'];
  known.country = ['MC', 'FR', 'Monaco', 'mco'];
  known.near = ['43.7384,7.4246', ' 43.73 , 7.42 ', '0,0', '90,180', '-91,0'];
  known.bbox = ['7.40,43.72,7.44,43.76', '-180,-90,180,90', '7.44,43.76,7.40,43.72', '0,0,0,0'];
  known.fields = ['name,phone', 'name', 'id,name,rating,categories', 'nope', 'name,,phone', ','];
  known.lang = ['de', 'fr-FR', 'zh-Hant-TW', 'xx'];
});

after(async () => {
  await app?.close();
  await t.dispose();
});

const tricky = [
  '',
  ' ',
  '0',
  '-0',
  '00',
  '-1',
  '1.5',
  '1e3',
  '1e400',
  '-1e400',
  '1e-400',
  'Infinity',
  '-Infinity',
  'NaN',
  '0x10',
  '9007199254740993',
  '99999999999999999999999',
  'true',
  'false',
  'null',
  'undefined',
  '[]',
  '{}',
  '%',
  '%25',
  '%zz',
  '\u0000',
  '\t',
  '\r\n',
  '😀',
  'Ａ',
  'ß',
  '\u202eevil',
  'Ωmega',
  'あいう',
  "'; DROP TABLE places;--",
  '<script>alert(1)</script>',
  '../../etc/passwd',
  ',,,',
  ',',
  'a,b,c,d',
  '-180,-90,180,90',
  '1,2',
  '*',
  '"',
  '\\',
  'a'.repeat(201),
  'x'.repeat(3000),
  'srch_aaaaaaaaaaaaaaaa',
  'srch_' + 'z'.repeat(16),
];

/** A value that fits the parameter's schema, or sits on its bounds. */
function validValue(name: string, schema: Schema, examples: unknown[]): fc.Arbitrary<string> {
  const choices: Array<fc.Arbitrary<string>> = [];
  const pool = [...(known[name] ?? []), ...examples.map(String)];
  if (pool.length > 0) choices.push(fc.constantFrom(...pool));
  if (schema.enum) choices.push(fc.constantFrom(...schema.enum.map(String)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'integer') {
    const min = schema.minimum ?? -1_000_000;
    const max = schema.maximum ?? 1_000_000;
    choices.push(fc.integer({ min, max }).map(String), fc.constantFrom(String(min), String(max), String(min - 1), String(max + 1)));
  } else if (type === 'number') {
    const min = schema.minimum ?? -1e6;
    const max = schema.maximum ?? 1e6;
    choices.push(
      fc.double({ min, max, noNaN: true }).map(String),
      fc.constantFrom(String(min), String(max), String(min - 0.001), String(max + 0.001)),
    );
  } else if (type === 'boolean') {
    choices.push(fc.constantFrom('true', 'false', '1', '0', 'yes', 'TRUE'));
  } else if (schema.pattern && !schema.enum) {
    choices.push(fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= 300));
  } else if (!schema.enum) {
    choices.push(fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) }));
  }
  return fc.oneof(...choices);
}

const invalidValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...tricky) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.double().map(String) },
  { weight: 1, arbitrary: fc.bigInt().map(String) },
);

/** What coercion turns into a number it should not accept: the values behind the 500s of issue 13. */
const numericEdge = fc.constantFrom(
  'Infinity',
  '-Infinity',
  '+Infinity',
  '1e400',
  '-1e400',
  '1e308',
  '-1e308',
  'NaN',
  '-0',
  '1e-400',
  '0.0000001',
  '9007199254740993',
  '1.5',
  ' 5 ',
  '5 ',
  '0b11',
  '1_000',
);

function paramValue(name: string, schema: Schema, examples: unknown[]): fc.Arbitrary<string> {
  const numeric = schema.type === 'integer' || schema.type === 'number';
  return fc.oneof(
    { weight: 3, arbitrary: validValue(name, schema, examples) },
    { weight: numeric ? 2 : 0, arbitrary: numericEdge },
    { weight: 2, arbitrary: invalidValue },
  );
}

/** The query string: each parameter omitted, given once or repeated; now and then an unknown one or a broken escape. */
function queryArbitrary(op: OpenApiOperation): fc.Arbitrary<string> {
  const params = (op.parameters ?? []).filter((p) => p.in === 'query');
  const parts = params.map((p) => {
    const examples = Object.values(p.examples ?? {}).map((e) => e.value);
    const value = paramValue(p.name, p.schema ?? {}, examples);
    // Mostly left out, so that one bad value at a time reaches the handler rather than the validator alone.
    return fc.oneof(
      { weight: 6, arbitrary: fc.constant([] as string[]) },
      { weight: 3, arbitrary: value.map((v) => [`${p.name}=${encodeURIComponent(v)}`]) },
      {
        weight: 1,
        arbitrary: fc.tuple(value, value).map(([a, b]) => [`${p.name}=${encodeURIComponent(a)}`, `${p.name}=${encodeURIComponent(b)}`]),
      },
    );
  });
  const extra = fc.oneof(
    { weight: 8, arbitrary: fc.constant([] as string[]) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ maxLength: 10 }), invalidValue)
        .map(([k, v]) => [`${encodeURIComponent(k)}=${encodeURIComponent(v)}`]),
    },
    { weight: 1, arbitrary: fc.constantFrom(['%zz'], ['query=%E0%A4%A'], ['=x'], ['&&'], ['per_page'], ['a[b]=1']) },
  );
  return fc.tuple(fc.tuple(...parts), extra).map(([ps, ex]) => [...ps.flat(), ...ex].join('&'));
}

/** A JSON value of any shape, with the numbers JSON cannot say exactly. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, 1e308, -1e308, 2 ** 53 + 1, 1.5, '', [], {}),
  fc.string({ maxLength: 20 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.array(fc.integer(), { maxLength: 3 }),
);

/** A body for a JSON operation: the schema's properties with good and bad values, or text that is not JSON at all. */
function bodyArbitrary(op: OpenApiOperation): fc.Arbitrary<{ payload: string; contentType: string | undefined }> {
  const schema = op.requestBody?.content?.['application/json']?.schema;
  const props = Object.entries(schema?.properties ?? {});
  const field = (name: string, s: Schema) =>
    fc.oneof(
      {
        weight: 3,
        arbitrary: validValue(name, s, s.examples ?? []).map((v) =>
          s.type === 'integer' || s.type === 'number' ? (Number.isFinite(Number(v)) ? Number(v) : v) : v,
        ),
      },
      { weight: 1, arbitrary: anyJson },
      { weight: 1, arbitrary: invalidValue },
    );
  const object = fc.record(Object.fromEntries(props.map(([n, s]) => [n, field(n, s)])), { requiredKeys: [] });
  const json = fc
    .tuple(object, fc.option(fc.tuple(fc.string({ maxLength: 8 }), anyJson), { freq: 6 }))
    .map(([o, extra]) => JSON.stringify(extra ? { ...o, [extra[0]]: extra[1] } : o));
  const raw = fc.constantFrom(
    '',
    'null',
    '[]',
    '"query"',
    '{',
    '{"query":',
    '{"query":"cafe","per_page":1e400}',
    '{"per_page":-1e400,"query":"x"}',
    '{"__proto__":{"x":1},"query":"a"}',
    '{"constructor":{"prototype":{}}}',
    `{"query":"${'a'.repeat(5000)}"}`,
    '['.repeat(500),
  );
  return fc.record({
    payload: fc.oneof({ weight: 5, arbitrary: json }, { weight: 2, arbitrary: raw }),
    contentType: fc.constantFrom<string | undefined>(
      'application/json',
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      undefined,
    ),
  });
}

interface FuzzRequest {
  options: InjectOptions;
  label: string;
}

function requestArbitrary(): fc.Arbitrary<FuzzRequest> {
  const auth = fc.oneof(
    { weight: 12, arbitrary: fc.constant('valid') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('none', 'Bearer nonsense', 'Bearer la_pat_000000000000000000000000000000aaaaaa', 'Basic Zm9vOmJhcg=='),
    },
  );
  const perOperation = operations.map(({ method, path, op }) =>
    fc
      .tuple(
        queryArbitrary(op),
        method === 'POST' || path === '/v1/search' ? fc.option(bodyArbitrary(op), { freq: method === 'POST' ? 20 : 4 }) : fc.constant(null),
        auth,
        fc.option(fc.constantFrom('de', 'fr-CH, fr;q=0.9', '*', 'xx-YY-ZZ-1234', '😀', ''), { freq: 4 }),
      )
      .map(([query, body, who, lang]): FuzzRequest => {
        const headers: Record<string, string> = {};
        if (who === 'valid') headers.authorization = user.authorization;
        else if (who !== 'none') headers.authorization = who;
        if (lang !== null) headers['accept-language'] = lang;
        if (body?.contentType) headers['content-type'] = body.contentType;
        const url = query ? `${path}?${query}` : path;
        return { label: `${method} ${url}`, options: { method, url, headers, ...(body ? { payload: body.payload } : {}) } };
      }),
  );
  // Exports stream a file each: one request in fifteen or so, like the other operations' share.
  return fc.oneof(...perOperation.map((arbitrary, i) => ({ weight: operations[i]?.path === '/api/v2/map/export' ? 1 : 2, arbitrary })));
}

function check(req: FuzzRequest, res: LightMyRequestResponse): void {
  statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  const where = `${req.label}${req.options.payload === undefined ? '' : ` body ${String(req.options.payload).slice(0, 200)}`}`;
  assert.ok(res.statusCode < 500, `${res.statusCode} for ${where}: ${res.body.slice(0, 300)}`);
  if (res.statusCode >= 400)
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${res.statusCode} for ${where}`);
  assert.ok(res.headers.ratelimit && res.headers['ratelimit-policy'], `no RateLimit fields for ${where}`);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', where);
}

test(`${runs.toLocaleString('en')} requests generated from the OpenAPI document never answer 5xx, and every 4xx is problem+json`, {
  timeout: 3_600_000,
}, async () => {
  assert.ok(operations.length >= 8, `operations found: ${operations.length}`);
  const started = performance.now();
  const arbitrary = requestArbitrary();
  console.log(`built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await fc.assert(
    fc.asyncProperty(arbitrary, async (req) => {
      check(req, await app.inject(req.options));
    }),
    { numRuns: runs, ...(seed === undefined ? {} : { seed }) },
  );
  const seconds = (performance.now() - started) / 1000;
  const byStatus = [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}: ${n}`)
    .join(', ');
  console.log(
    `fuzz: ${runs} property runs, ${[...statuses.values()].reduce((a, b) => a + b, 0)} requests in ${seconds.toFixed(1)} s (${byStatus})`,
  );
  // The generators must reach the handlers, not only the validator.
  assert.ok((statuses.get(200) ?? 0) > runs / 10, byStatus);
  assert.ok((statuses.get(400) ?? 0) > runs / 10, byStatus);
});
