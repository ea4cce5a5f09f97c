import { type Static, type TSchema, TypeRegistry } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { AppError, type FieldError } from '../errors.ts';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

// `Type.Unsafe` carries plain JSON Schema (the routes use it for enums, so that Ajv reports one error naming
// the allowed values): TypeBox checks it by its `enum`.
if (!TypeRegistry.Has('Unsafe')) {
  TypeRegistry.Set('Unsafe', (schema: { enum?: unknown[] }, value) => schema.enum === undefined || schema.enum.includes(value));
}

/**
 * Validates a value against a route's TypeBox schema outside Fastify's own validation (a GET body read by
 * hand, a dashboard form that feeds an API service), with the same answer: `validation_failed` listing
 * each bad field under `location` (`body.query`, `querystring.min_rating`), unknown properties named as
 * such with the allowed ones. `coerce` converts strings the way query strings are (numbers, booleans).
 */
export function checkAgainstSchema<T extends TSchema>(
  schema: T,
  value: unknown,
  location: string,
  options: { coerce?: boolean } = {},
): Static<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  const input = options.coerce ? Value.Convert(schema, Value.Default(schema, structuredClone(value))) : value;
  const properties = (schema as { properties?: Record<string, unknown> }).properties;
  const errors: FieldError[] = [...check.Errors(input)].map((e) => {
    const path = e.path.replace(/^\//, '').replaceAll('/', '.');
    const field = path ? `${location}.${path}` : location;
    if (properties && path !== '' && !(path.split('.')[0]! in properties)) {
      return { field, message: 'is not a known parameter', allowed: Object.keys(properties) };
    }
    const allowed = (e.schema as { enum?: unknown[] }).enum;
    if (allowed) return { field, message: `must be one of: ${allowed.join(', ')}`, allowed };
    return { field, message: e.message };
  });
  if (errors.length > 0) {
    // One error a field: TypeBox reports a union's every branch.
    const first = [...new Map(errors.map((e) => [e.field, e])).values()];
    throw new AppError('validation_failed', first.map((e) => `${e.field}: ${e.message}`).join('; '), { errors: first });
  }
  return input as Static<T>;
}
