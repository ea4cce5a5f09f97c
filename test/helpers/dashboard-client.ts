import assert from 'node:assert/strict';
import type { App } from '../../src/app.ts';

/** Visitors so far: each gets an address of its own. */
let visitors = 0;

/**
 * A cookie jar over app.inject that fills in each form's `_csrf` from the last page, like a browser.
 * Each client is a visitor of its own address, as sign-ups are limited per address.
 */
export class DashboardClient {
  cookies = new Map<string, string>();
  lastHtml = '';
  readonly ip = `198.51.${100 + Math.floor(++visitors / 250)}.${visitors % 250}`;
  constructor(private readonly app: App) {}

  async get(url: string) {
    const res = await this.app.inject({ method: 'GET', url, cookies: Object.fromEntries(this.cookies), remoteAddress: this.ip });
    this.keep(res);
    if (res.headers['content-type']?.toString().startsWith('text/html')) this.lastHtml = res.body;
    return res;
  }

  async post(url: string, fields: Record<string, string | string[]>, options: { csrf?: string | null } = {}) {
    const body = new URLSearchParams();
    const csrf = options.csrf === undefined ? this.csrf() : options.csrf;
    if (csrf !== null) body.append('_csrf', csrf);
    for (const [k, v] of Object.entries(fields)) for (const one of ([] as string[]).concat(v)) body.append(k, one);
    const res = await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.ip,
      cookies: Object.fromEntries(this.cookies),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: body.toString(),
    });
    this.keep(res);
    if (res.headers['content-type']?.toString().startsWith('text/html')) this.lastHtml = res.body;
    return res;
  }

  csrf(): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(this.lastHtml);
    assert.ok(m, 'the last page has a form token');
    return m[1] as string;
  }

  private keep(res: { cookies: Array<{ name: string; value: string; maxAge?: number; expires?: Date }> }) {
    for (const c of res.cookies) {
      if (c.value === '' || (c.expires && c.expires.getTime() < Date.now())) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
  }
}
