import type { Static, TObject } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { AppError, type FieldError } from '../../infra/errors.ts';
import { checkAgainstSchema } from '../../infra/http/check-schema.ts';
import type { FormState } from './pages.ts';

/** A form body as @fastify/formbody parses it: strings, or arrays when a name repeats. */
export type FormBody = Record<string, string | string[] | undefined>;

/** The body of a form route, as the form parser left it (nothing when the request had none). */
export function formBody(body: unknown): FormBody {
  if (body === null || typeof body !== 'object') return {};
  return Object.fromEntries(
    Object.entries(body).filter((e): e is [string, string | string[]] => typeof e[1] === 'string' || Array.isArray(e[1])),
  );
}

/** Form values are strings, or arrays when a name repeats; a field sent twice counts as its first value. */
export function text(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

export function list(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : ([] as string[]).concat(value);
}

/**
 * Checks a form against a TypeBox schema (the API's own properties where the fields are the same, so the form
 * follows the API's rules) and returns its values, converted as a query string's are. Each field counts once
 * (its first value; array properties keep them all), trimmed unless it is `verbatim` (a password), and an
 * empty input counts as not given. A refusal is `validation_failed` naming each field as the form does
 * (`format must be one of csv, xlsx, …`); `messages` words a field's refusal for people where the schema's
 * own message is for programs (a pattern).
 */
export function parseForm<T extends TObject>(
  schema: T,
  body: unknown,
  { messages = {}, verbatim = [] }: { messages?: Partial<Record<string, string>>; verbatim?: readonly string[] } = {},
): Static<T> {
  const values: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(formBody(body))) {
    const isArray = (schema.properties[name] as { type?: unknown } | undefined)?.type === 'array';
    const given = isArray ? list(value).filter((v) => v !== '') : verbatim.includes(name) ? text(value) : text(value).trim();
    if (given.length > 0) values[name] = given;
  }
  try {
    return checkAgainstSchema(schema, values, 'body', { coerce: true });
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const errors = (error.extras.errors ?? []).map((e) => {
      const field = e.field.replace(/^body\./, '');
      const message = messages[field] ?? (Array.isArray(e.allowed) ? `must be one of ${e.allowed.join(', ')}` : e.message);
      return { ...e, field, message };
    });
    throw new AppError('validation_failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors });
  }
}

/** Turns a service error into the form's error list; anything that is not an AppError is rethrown (500). */
export function formError(error: unknown, values: FormState['values']): FormState {
  if (!(error instanceof AppError)) throw error;
  // The services name fields as the API does (`querystring.city`); the form's inputs are named `city`. An
  // error about the whole request (`querystring`: say what to search for) is the form's general message.
  const all = error.extras.errors ?? [];
  const errors: FieldError[] = all
    .filter((e) => e.field.includes('.') || !/^(querystring|body)$/.test(e.field))
    .map((e) => ({ ...e, field: e.field.replace(/^(querystring|body)\./, '') }));
  return { values, errors, general: errors.length < all.length || errors.length === 0 ? error.message : undefined };
}

export function statusOf(error: unknown): number {
  return error instanceof AppError ? error.status : 500;
}

/** A service refusal's headers (Retry-After of a throttled sign-in or sign-up) on the page that shows it. */
export function withErrorHeaders(reply: FastifyReply, error: unknown): FastifyReply {
  return error instanceof AppError ? reply.headers(error.headers) : reply;
}
