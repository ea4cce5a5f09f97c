import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';
import type { Ajv } from 'ajv';

/**
 * The one rule that keeps non-finite numbers out of every request: each `number` or `integer` in a
 * route's querystring, params, headers or body schema must be finite after coercion.
 *
 * Why a rule of its own: Ajv coerces the query string `per_page=Infinity` (or `1e400`, `-Infinity`) to
 * the number Infinity and then skips `minimum`/`maximum`, whose generated checks only run on finite
 * numbers, so the value reached the handlers (a 500 from SQLite, or a filter silently dropped).
 * Rather than asking every schema to remember a special number type, the validator compiler marks
 * every numeric node of the schema it is given with the `finite` keyword, which Ajv checks on the
 * coerced value. The schemas themselves (and so the OpenAPI document) are left as written.
 */
export const finiteKeyword = 'finite';

type Schema = Record<string, unknown>;
type CompilerOptions = { plugins?: unknown[] } & Record<string, unknown>;
/** Fastify's `buildValidator` contract (its published types describe the inner function's argument as a bare schema). */
type BuildValidator = (externalSchemas: unknown, options?: CompilerOptions) => (route: { schema: unknown }) => unknown;

/** A copy of `schema` with `finite: true` on every node that accepts a number. */
export function requireFiniteNumbers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(requireFiniteNumbers);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema as Schema)) {
    // `properties` and the like map names to schemas; `enum`, `const`, `default`, `examples` hold data.
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions') {
      out[key] = Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, requireFiniteNumbers(v)]));
    } else if (
      ['items', 'prefixItems', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else', 'contains'].includes(key)
    ) {
      out[key] = requireFiniteNumbers(value);
    } else {
      out[key] = value;
    }
  }
  const types = ([] as unknown[]).concat(out.type);
  if (types.includes('number') || types.includes('integer')) out[finiteKeyword] = true;
  return out;
}

/**
 * Fastify's own Ajv validator compiler with the `finite` keyword added and every route schema marked.
 * Pass as `schemaController.compilersFactory.buildValidator`.
 */
export function finiteNumbersValidator(): ValidatorFactory {
  return finiteNumbersBuilder() as unknown as ValidatorFactory;
}

function finiteNumbersBuilder(): BuildValidator {
  const build = AjvCompiler() as unknown as (externalSchemas: unknown, options: CompilerOptions) => (route: { schema: unknown }) => unknown;
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, {
      ...options,
      plugins: [
        ...(options?.plugins ?? []),
        (ajv: Ajv) => {
          // No `type` restriction: Ajv groups typed keywords behind a check that skips non-finite numbers.
          ajv.addKeyword({
            keyword: finiteKeyword,
            schemaType: 'boolean',
            errors: false,
            validate: (required: boolean, data: unknown) => !required || typeof data !== 'number' || Number.isFinite(data),
          });
          return ajv;
        },
      ],
    });
    return (route) => compile({ ...route, schema: requireFiniteNumbers(route.schema) });
  };
}
