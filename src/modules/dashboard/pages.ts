import type { FieldError } from '../../infra/errors.ts';
import { scopeCosts } from '../../infra/ratelimit/costs.ts';
import { scopes as allScopes, type Scope } from '../auth/auth.types.ts';
import { passwordMinLength } from '../auth/passwords.ts';
import type { AccountUsage } from '../auth/quotas.service.ts';
import type { TokenRecord } from '../auth/tokens.service.ts';
import { type DayCount, usageChart } from './chart.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, errorSummary, field, formatCount, type PageContext, page, time } from './layout.ts';

export const scopeDescriptions: Record<Scope, string> = {
  'places:read': 'Read places: look up and list places (GET /api/v1/user-api/places)',
  search: 'Search: run and page through searches',
  export: 'Export: download a saved search as CSV, XLSX, JSON…',
  'suppressions:write':
    'Change the suppression list: add (JSON or a CSV upload) and remove phones, domains, emails and places never to show again',
  enrich:
    'Queue the places of a saved search for enrichment (emails, phones and social profiles from their own websites) and follow the jobs',
  monitors: 'Monitors: watch saved searches and read the events of places that enter, leave or change in them',
  match: 'Match a list: find your own accounts (name, address, phone, website…) in the catalog, with a score (POST /api/v2/match)',
};

/** Expiry choices offered on the form, in days; `never` needs an explicit confirmation. */
export const expiryChoices = [7, 30, 90, 180, 365] as const;

export interface FormState {
  values: Record<string, string | string[] | undefined>;
  errors: FieldError[];
  general?: string;
}

const emptyForm: FormState = { values: {}, errors: [] };
const str = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

export function signInPage(ctx: PageContext, form: FormState = emptyForm, next = ''): SafeHtml {
  return page(
    ctx,
    'Sign in',
    html`<div class="narrow">
    ${errorSummary(form.errors, form.general)}
    <form method="post" action="/signin" class="card" novalidate>
      ${csrfField(ctx)}
      ${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
      ${field({ name: 'email', label: 'Email', type: 'email', value: str(form.values.email), required: true, autocomplete: 'username', errors: form.errors })}
      ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password', errors: form.errors })}
      <button type="submit" class="button">Sign in</button>
    </form>
    <p>No account yet? <a href="/signup">Create one</a>: it takes an email and a password.</p>
  </div>`,
  );
}

export function signUpPage(ctx: PageContext, form: FormState = emptyForm): SafeHtml {
  return page(
    ctx,
    'Create your account',
    html`<div class="narrow">
    <p class="lede">Search business data by type and city, export leads, and call the same data from your code with an API token.</p>
    ${errorSummary(form.errors, form.general)}
    <form method="post" action="/signup" class="card" novalidate>
      ${csrfField(ctx)}
      ${field({ name: 'email', label: 'Email', type: 'email', value: str(form.values.email), required: true, autocomplete: 'email', errors: form.errors })}
      ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'new-password', hint: `At least ${passwordMinLength} characters. A passphrase of a few words is easy to type and hard to guess.`, errors: form.errors })}
      <button type="submit" class="button">Create account</button>
    </form>
    <p>Already registered? <a href="/signin">Sign in</a>.</p>
  </div>`,
  );
}

export function passwordPage(ctx: PageContext, form: FormState = emptyForm, changed = false): SafeHtml {
  return page(
    ctx,
    'Account',
    html`<div class="narrow">
    <p>Signed in as <strong>${ctx.email}</strong>.</p>
    ${changed ? html`<div class="alert alert-success" role="status">Your password was changed. Every other session has been signed out.</div>` : ''}
    ${errorSummary(form.errors, form.general)}
    <form method="post" action="/account/password" class="card" novalidate>
      <h2>Change password</h2>
      ${csrfField(ctx)}
      ${field({ name: 'current_password', label: 'Current password', type: 'password', required: true, autocomplete: 'current-password', errors: form.errors })}
      ${field({ name: 'new_password', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', hint: `At least ${passwordMinLength} characters. Other sessions are signed out.`, errors: form.errors })}
      <button type="submit" class="button">Change password</button>
    </form>
  </div>`,
  );
}

function statusBadge(t: TokenRecord): SafeHtml {
  const labels = { active: 'Active', rotating: 'Rotating', expired: 'Expired', revoked: 'Revoked' } as const;
  return html`<span class="badge badge-${t.status}">${labels[t.status]}</span>`;
}

export function tokensPage(ctx: PageContext, tokens: TokenRecord[], notice?: string): SafeHtml {
  const live = tokens.filter((t) => t.status === 'active' || t.status === 'rotating');
  const past = tokens.filter((t) => t.status === 'expired' || t.status === 'revoked');
  const row = (t: TokenRecord) => html`<tr>
    <th scope="row">${t.name}</th>
    <td><code>${t.displayPrefix}…</code></td>
    <td>${t.scopes.map((s) => html`<span class="scope">${s}</span> `)}</td>
    <td>${time(t.createdAt, { dateOnly: true })}</td>
    <td>${t.lastUsedAt ? html`${time(t.lastUsedAt, { compact: true })}<br><span class="muted">from ${t.lastUsedIp ?? 'unknown IP'}</span>` : html`<span class="muted">Never used</span>`}</td>
    <td>${t.status === 'rotating' ? html`Until ${time(t.graceUntil, { compact: true })}` : t.expiresAt ? time(t.expiresAt, { dateOnly: true }) : html`<span class="warn-text">Never</span>`}</td>
    <td>${statusBadge(t)}</td>
    <td class="actions">${t.status === 'active' || t.status === 'rotating' ? tokenActions(ctx, t) : ''}</td>
  </tr>`;
  const table = (list: TokenRecord[], caption: string) => html`<div class="table-wrap"><table>
    <caption>${caption} <span class="muted">(times in UTC)</span></caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Token</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${list.map(row)}</tbody>
  </table></div>`;
  return page(
    ctx,
    'API tokens',
    html`${notice ? html`<div class="alert alert-success" role="status">${notice}</div>` : ''}
    <p class="lede">Tokens let your code call the API as you. Each token is shown once, when it is created; here you see its first characters only.</p>
    <p><a class="button" href="/tokens/new">Create a token</a></p>
    ${live.length > 0 ? table(live, 'Active tokens') : html`<p class="empty">${past.length > 0 ? 'No active tokens: create one to call the API.' : 'You have no tokens yet.'}</p>`}
    ${past.length > 0 ? html`<details class="past"><summary>Revoked and expired tokens (${past.length})</summary>${table(past, 'Revoked and expired tokens')}</details>` : ''}`,
  );
}

const graceChoices: Array<[number, string]> = [
  [0, 'no grace: stops now'],
  [3600, '1 hour'],
  [86400, '1 day'],
  [604800, '7 days'],
];

function tokenActions(ctx: PageContext, t: TokenRecord): SafeHtml {
  const rotate =
    t.status === 'active'
      ? html`<form method="post" action="/tokens/${t.id}/rotate" class="inline-form">
      ${csrfField(ctx)}
      <label for="grace-${t.id}">Old token works for</label>
      <span class="nowrap"><select id="grace-${t.id}" name="grace_seconds">${graceChoices.map(([s, l]) => html`<option value="${s}"${s === 3600 ? html` selected` : ''}>${l}</option>`)}</select>
      <button type="submit" class="button button-secondary">Rotate<span class="visually-hidden"> ${t.name}</span></button></span>
    </form>`
      : '';
  return html`${rotate}<form method="post" action="/tokens/${t.id}/revoke" class="inline-form">
    ${csrfField(ctx)}
    <button type="submit" class="button button-danger">Revoke<span class="visually-hidden"> ${t.name}</span></button>
  </form>`;
}

export function newTokenPage(ctx: PageContext, form: FormState = emptyForm, welcome = false): SafeHtml {
  const chosenScopes = form.values.scopes === undefined ? ['places:read', 'search'] : ([] as string[]).concat(form.values.scopes);
  const expiry = str(form.values.expiry) || '90';
  const scopeError = form.errors.find((e) => e.field === 'scopes');
  const expiryError = form.errors.find((e) => e.field === 'expiry' || e.field === 'expires_in_days' || e.field === 'confirm_no_expiry');
  return page(
    ctx,
    'Create an API token',
    html`<div class="narrow">
    ${welcome ? html`<div class="alert alert-success" role="status">Welcome! Your account is ready. Create a token to call the API from your code, or go straight to <a href="/search">Search</a>.</div>` : ''}
    ${errorSummary(form.errors, form.general)}
    <form method="post" action="/tokens" class="card" novalidate>
      ${csrfField(ctx)}
      ${field({ name: 'name', label: 'Name', value: str(form.values.name), required: true, hint: 'What uses it, e.g. "CRM sync" or "laptop".', errors: form.errors })}
      <fieldset class="field${scopeError ? ' field-error' : ''}" id="f-scopes"${scopeError ? html` aria-describedby="f-scopes-error"` : ''}>
        <legend>Scopes</legend>
        <p class="hint">Grant only what the code needs.</p>
        ${scopeError ? html`<p class="error" id="f-scopes-error"><span class="visually-hidden">Error:</span> ${scopeError.message}</p>` : ''}
        ${allScopes.map(
          (
            s,
          ) => html`<div class="check"><input type="checkbox" id="scope-${s.replace(':', '-')}" name="scopes" value="${s}"${chosenScopes.includes(s) ? html` checked` : ''}>
          <label for="scope-${s.replace(':', '-')}"><code>${s}</code> — ${scopeDescriptions[s]}</label></div>`,
        )}
      </fieldset>
      <fieldset class="field${expiryError ? ' field-error' : ''}" id="f-expiry"${expiryError ? html` aria-describedby="f-expiry-error"` : ''}>
        <legend>Expires</legend>
        ${expiryError ? html`<p class="error" id="f-expiry-error"><span class="visually-hidden">Error:</span> ${expiryError.message}</p>` : ''}
        ${expiryChoices.map(
          (
            d,
          ) => html`<div class="check"><input type="radio" id="expiry-${d}" name="expiry" value="${d}"${expiry === String(d) ? html` checked` : ''}>
          <label for="expiry-${d}">In ${d} days${d === 90 ? ' (recommended)' : d === 365 ? ' (the longest)' : ''}</label></div>`,
        )}
        <div class="check"><input type="radio" id="expiry-never" name="expiry" value="never"${expiry === 'never' ? html` checked` : ''} aria-describedby="no-expiry-warning">
          <label for="expiry-never">No expiry</label></div>
        <div class="alert alert-warning" id="no-expiry-warning">
          <p><strong>Warning:</strong> a token without expiry works until you revoke it. If it leaks, it can be used for as long as nobody notices. Prefer an expiry and rotate the token.</p>
          <div class="check"><input type="checkbox" id="f-confirm_no_expiry" name="confirm_no_expiry" value="yes"${str(form.values.confirm_no_expiry) === 'yes' ? html` checked` : ''}>
            <label for="f-confirm_no_expiry">I understand: create it without expiry</label></div>
        </div>
      </fieldset>
      <button type="submit" class="button">Create token</button>
      <a class="button button-quiet" href="/tokens">Cancel</a>
    </form>
  </div>`,
  );
}

export interface CreatedToken {
  token: string;
  record: TokenRecord;
  /** Set after a rotation: the replaced token and when it stops working. */
  previous?: TokenRecord;
}

/** Shown once, right after creation or rotation; the response is `no-store`. */
export function tokenCreatedPage(ctx: PageContext, created: CreatedToken, baseUrl: string): SafeHtml {
  const { token, record, previous } = created;
  const curl = `curl -H "Authorization: Bearer ${token}" \\\n  "${baseUrl}/api/v1/user-api/places"`;
  return page(
    ctx,
    previous ? 'Token rotated' : 'Your new token',
    html`<div class="narrow">
    <div class="alert alert-warning" role="status">
      <p><strong>Copy this token now.</strong> It is shown only once: LeadAtlas stores a fingerprint of it, not the token itself.</p>
    </div>
    ${previous ? html`<p>The old token <code>${previous.displayPrefix}…</code> keeps working until ${time(previous.graceUntil)}. Deploy the new one before then.</p>` : ''}
    <div class="card">
      <label for="token-value" class="label-strong">${record.name}</label>
      <div class="copy-row">
        <input id="token-value" class="mono" type="text" readonly value="${token}" spellcheck="false" autocomplete="off" data-testid="token-value">
        <button type="button" class="button" data-copy="token-value" data-testid="copy-token">Copy</button>
      </div>
      <p class="copy-status" role="status" aria-live="polite" data-for="token-value"></p>
      <dl class="facts">
        <dt>Scopes</dt><dd>${record.scopes.join(', ')}</dd>
        <dt>Expires</dt><dd>${record.expiresAt ? time(record.expiresAt) : html`<span class="warn-text">Never: revoke it when you no longer need it</span>`}</dd>
      </dl>
    </div>
    <h2>Your first call</h2>
    <p>List places with the token${record.scopes.includes('places:read') ? '' : html` <strong>(this token lacks <code>places:read</code>, so this call will answer 403)</strong>`}:</p>
    <div class="code-block">
      <pre id="first-call" tabindex="0"><code>${curl}</code></pre>
      <button type="button" class="button button-secondary" data-copy="first-call">Copy command</button>
    </div>
    <p class="copy-status" role="status" aria-live="polite" data-for="first-call"></p>
    <p><a class="button button-secondary" href="/tokens">Back to your tokens</a> <a class="button button-quiet" href="/search">Try a search</a></p>
  </div>`,
    { scripts: ['copy.js'] },
  );
}

export function usagePage(ctx: PageContext, days: DayCount[], usage: AccountUsage, tokenUnitsPerMinute: number): SafeHtml {
  const total = days.reduce((s, d) => s + d.count, 0);
  const busiest = days.reduce<DayCount | undefined>((b, d) => (!b || d.count > b.count ? d : b), undefined);
  const { quotas } = usage;
  const quotaRow = (what: string, used: number, limit: number, renews: SafeHtml | string, custom: boolean) => html`<tr>
    <th scope="row">${what}${custom ? html` <span class="muted">(set for your account)</span>` : ''}</th>
    <td>${formatCount(used)}</td><td>${formatCount(limit)}</td><td>${formatCount(Math.max(0, limit - used))}</td><td>${renews}</td>
  </tr>`;
  return page(
    ctx,
    'Usage',
    html`<p class="lede">API requests made with your tokens, per day (UTC), over the last ${days.length} days. Counts reach this page within a few seconds.</p>
    <div class="stats">
      <div class="stat"><span class="stat-value">${formatCount(total)}</span><span class="stat-label">requests in ${days.length} days</span></div>
      <div class="stat"><span class="stat-value">${formatCount(days[days.length - 1]?.count ?? 0)}</span><span class="stat-label">today</span></div>
      <div class="stat"><span class="stat-value">${busiest && busiest.count > 0 ? busiest.day : '—'}</span><span class="stat-label">busiest day</span></div>
    </div>
    <div class="card">
      <h2>Quotas</h2>
      <div class="table-wrap"><table class="numbers">
        <caption class="visually-hidden">Quotas and what is used of them</caption>
        <thead><tr><th scope="col">Quota</th><th scope="col">Used</th><th scope="col">Limit</th><th scope="col">Left</th><th scope="col">Renews</th></tr></thead>
        <tbody>
          ${quotaRow('API requests today', usage.requestsToday, quotas.requestsPerDay, html`${time(usage.requestsResetAt, { compact: true })}`, quotas.custom.requestsPerDay)}
          ${quotaRow('Exported rows this month', usage.exportRowsThisMonth, quotas.exportRowsPerMonth, html`${time(usage.exportRowsResetAt, { dateOnly: true })}`, quotas.custom.exportRowsPerMonth)}
          ${quotaRow('List rows matched this month', usage.matchRowsThisMonth, quotas.matchRowsPerMonth, html`${time(usage.exportRowsResetAt, { dateOnly: true })}`, quotas.custom.matchRowsPerMonth)}
          ${quotaRow('Exports running now', usage.runningExports, quotas.concurrentExports, '—', quotas.custom.concurrentExports)}
        </tbody>
      </table></div>
      <p class="hint">Each token may also spend ${formatCount(tokenUnitsPerMinute)} units a minute, all at once or spread: a search costs ${scopeCosts.search}, an export ${scopeCosts.export}, listing your leads or the reference lists ${scopeCosts['places:read']}. Every API answer says what is left in its <code>RateLimit</code> header; an export that reaches the monthly row quota ends there, with the rows written so far.</p>
    </div>
    <figure class="card chart-card">
      <figcaption>Requests per day</figcaption>
      ${usageChart(days)}
    </figure>
    <details class="card">
      <summary>The same numbers as a table</summary>
      <div class="table-wrap"><table class="numbers">
        <caption class="visually-hidden">Requests per day</caption>
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Requests</th></tr></thead>
        <tbody>${[...days].reverse().map((d) => html`<tr><th scope="row"><time datetime="${d.day}">${d.day}</time></th><td>${formatCount(d.count)}</td></tr>`)}</tbody>
      </table></div>
    </details>`,
  );
}

export function errorPage(ctx: PageContext, status: number, title: string, detail: string): SafeHtml {
  return page(
    ctx,
    title,
    html`<div class="narrow"><div class="alert alert-error" role="alert"><p>${detail}</p></div>
    <p><a href="${ctx.email ? '/search' : '/signin'}">Back to ${ctx.email ? 'the dashboard' : 'sign in'}</a> · status ${status}</p></div>`,
  );
}
