/**
 * Whether an error says the database cannot be reached now rather than that the request was wrong: a
 * refused, reset or timed-out connection, PostgreSQL shutting down or out of connections, SQLite busy
 * past its timeout. Such a request may succeed when retried: the API answers 503 with Retry-After, not 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (networkCodes.has(code)) return true;
    // PostgreSQL SQLSTATE: class 08 connection exception; 57P01–57P03 shutting down or not yet up; 53300 too many connections.
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return true;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code.startsWith('SQLITE_BUSY_')) return true;
  }
  // node-postgres reports a lost or unobtainable connection in its message only.
  return /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(error.message);
}

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
