import { AppError } from './errors.ts';

/**
 * Opaque keyset cursors, one codec for every paged list (searches, leads): a JSON value in base64url on
 * the way out; on the way back in, `read` checks the decoded value and anything else is the client's
 * mistake, `validation_failed` on `field`. A cursor is not a secret: what it points into is still
 * checked against the caller's account.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T>(cursor: string, read: (value: unknown) => T | undefined, error: { field: string; message: string }): T {
  let decoded: T | undefined;
  try {
    decoded = read(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    // Not JSON: the same answer as JSON of the wrong shape, below.
  }
  if (decoded !== undefined) return decoded;
  throw new AppError('validation_failed', `${error.field}: ${error.message}`, { errors: [{ field: error.field, message: error.message }] });
}
