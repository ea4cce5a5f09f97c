import { emailStatuses, phoneTypes, websiteStatuses } from '../contacts/trust.types.ts';
import type { ExportSummary } from '../exports/exports.service.ts';
import type { Place } from '../places/places.schema.ts';
import type { SearchSummary } from '../search/saved-searches.ts';
import type { SavedSearch, SearchInput, SearchResolution } from '../search/search.types.ts';
import { barChart } from './chart.ts';
import { exportJobForm } from './exports.views.ts';
import { html, type SafeHtml, safeUrl } from './html.ts';
import { csrfField, errorSummary, formatCount, type PageContext, page, time } from './layout.ts';
import type { FormState } from './pages.ts';

/** Kinds of business offered as suggestions; any term the taxonomy knows (in any language) works. */
const typeSuggestions = [
  'restaurant',
  'cafe',
  'bar',
  'hotel',
  'bakery',
  'pharmacy',
  'dentist',
  'doctors',
  'hairdresser',
  'supermarket',
  'clothes',
  'florist',
  'optician',
  'car_repair',
  'bank',
  'fast_food',
  'jewelry',
  'beauty',
  'fitness_centre',
  'veterinary',
];

export const downloadFormats: Array<{ format: string; label: string }> = [
  { format: 'csv', label: 'CSV' },
  { format: 'xlsx', label: 'Excel (XLSX)' },
  { format: 'geojson', label: 'GeoJSON' },
  { format: 'json', label: 'JSON' },
];

const str = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

function errorFor(form: FormState, name: string) {
  return form.errors.find((e) => e.field === name);
}

function textField(
  form: FormState,
  name: string,
  label: string,
  hint: string,
  options: { list?: string; required?: boolean; type?: 'text' | 'datetime-local'; suggest?: 'name' | 'category' | 'city' } = {},
): SafeHtml {
  const error = errorFor(form, name);
  const id = `f-${name}`;
  const allowed = Array.isArray(error?.allowed)
    ? (error.allowed as unknown[]).filter((a): a is string => typeof a === 'string').slice(0, 6)
    : [];
  return html`<div class="field${error ? ' field-error' : ''}">
    <label for="${id}">${label}${options.required ? '' : html` <span class="optional">(optional)</span>`}</label>
    <p class="hint" id="${id}-hint">${hint}</p>
    ${error ? html`<p class="error" id="${id}-error"><span class="visually-hidden">Error:</span> ${error.message}${allowed.length > 0 ? html`. Did you mean: ${allowed.join(', ')}?` : ''}</p>` : ''}
    <input id="${id}" name="${name}" type="${options.type ?? 'text'}" value="${str(form.values[name])}"${options.list ? html` list="${options.list}"` : ''}${options.suggest ? html` data-suggest="${options.suggest}" autocomplete="off"` : ''} aria-describedby="${id}-hint${error ? ` ${id}-error` : ''}"${error ? html` aria-invalid="true"` : ''}>
  </div>`;
}

/** Words for the trust statuses, on the form and the badges (`trustBadge`). */
export const statusLabels: Record<string, string> = {
  valid_domain: 'valid domain',
  no_mx: 'no mail server',
  invalid: 'invalid',
  unknown: 'unknown',
  mobile: 'mobile',
  fixed_line: 'fixed line',
  toll_free: 'toll free',
  premium_rate: 'premium rate',
  voip: 'VoIP',
  live: 'live',
  redirected: 'redirected',
  parked: 'parked',
  dead: 'dead',
};

function select(form: FormState, name: string, label: string, options: Array<[string, string]>): SafeHtml {
  const value = str(form.values[name]);
  const error = errorFor(form, name);
  return html`<div class="field${error ? ' field-error' : ''}">
    <label for="f-${name}">${label}</label>
    ${error ? html`<p class="error" id="f-${name}-error"><span class="visually-hidden">Error:</span> ${error.message}</p>` : ''}
    <select id="f-${name}" name="${name}">${options.map(([v, l]) => html`<option value="${v}"${value === v ? html` selected` : ''}>${l}</option>`)}</select>
  </div>`;
}

/** What a badge shows of a contact value: its verdict, the model's confidence, and the evidence behind them. */
interface TrustedValue {
  status?: string | null;
  type?: string | null;
  confidence?: number | null;
  source_count?: number;
  checked_at?: string | null;
  role?: boolean;
  free_provider?: boolean;
  disposable?: boolean;
  final_domain?: string | null;
}

/**
 * A contact's badge: its status (an email's domain check, a phone's type, a website's last fetch) and confidence,
 * coloured by the confidence; the title says why (how many sources agree, when it was checked, role or personal).
 */
export function trustBadge(value: TrustedValue | undefined): SafeHtml | '' {
  if (!value || value.confidence === undefined || value.confidence === null) return '';
  const verdict = value.status ?? value.type ?? 'unknown';
  const level = value.confidence >= 0.8 ? 'high' : value.confidence >= 0.5 ? 'medium' : 'low';
  const why = [
    `${value.source_count ?? 1} source${(value.source_count ?? 1) === 1 ? '' : 's'}`,
    value.checked_at ? `checked ${value.checked_at.slice(0, 10)}` : null,
    value.final_domain ? `now at ${value.final_domain}` : null,
    value.role ? 'role address' : null,
    value.free_provider ? 'free mail provider' : null,
    value.disposable ? 'disposable domain' : null,
  ].filter((w) => w !== null);
  return html` <span class="badge badge-${level}" data-testid="trust-badge" title="${why.join(', ')}">${statusLabels[verdict] ?? verdict} · ${Math.round(value.confidence * 100)} %</span>`;
}

function checkbox(form: FormState, name: string, label: string): SafeHtml {
  return html`<div class="check"><input type="checkbox" id="f-${name}" name="${name}" value="yes"${str(form.values[name]) === 'yes' ? html` checked` : ''}><label for="f-${name}">${label}</label></div>`;
}

export function searchForm(ctx: PageContext, form: FormState): SafeHtml {
  const rating = str(form.values.min_rating);
  const sort = str(form.values.sort) || 'relevance';
  return html`<form method="post" action="/search" class="card search-form" novalidate aria-label="Search places">
    ${csrfField(ctx)}
    ${textField(form, 'type', 'Type of business', 'Any language: restaurant, Friseur…', { list: 'type-suggestions', required: true, suggest: 'category' })}
    <datalist id="type-suggestions">${typeSuggestions.map((t) => html`<option value="${t}"></option>`)}</datalist>
    ${textField(form, 'city', 'City', 'e.g. Monaco, München, Porto', { list: 'city-suggestions', required: true, suggest: 'city' })}
    <datalist id="city-suggestions"></datalist>
    ${textField(form, 'country', 'Country', 'Picks between cities of one name')}
    ${textField(form, 'query', 'Name contains', 'Words in the name', { list: 'name-suggestions', suggest: 'name' })}
    <datalist id="name-suggestions"></datalist>
    <fieldset class="filters">
      <legend>Only places with</legend>
      ${checkbox(form, 'has_phone', 'a phone number')}
      ${checkbox(form, 'has_website', 'a website')}
      ${checkbox(form, 'has_email', 'an email address')}
      ${checkbox(form, 'has_social', 'a social profile')}
    </fieldset>
    <fieldset class="filters">
      <legend>Opening hours</legend>
      ${checkbox(form, 'open_now', 'Open now')}
      ${textField(form, 'open_at', 'Open at', 'Local time of each place, e.g. 2026-12-24T18:00', { type: 'datetime-local' })}
    </fieldset>
    <fieldset class="filters">
      <legend>Trust in the contacts</legend>
      ${select(form, 'email_status', 'Best email', [['', 'Any'], ...emailStatuses.map((v) => [v, statusLabels[v]!] as [string, string])])}
      ${select(form, 'phone_type', 'Best phone', [['', 'Any'], ...phoneTypes.map((v) => [v, statusLabels[v]!] as [string, string])])}
      ${select(form, 'website_status', 'Website', [['', 'Any'], ...websiteStatuses.map((v) => [v, statusLabels[v]!] as [string, string])])}
      ${select(form, 'min_confidence', 'Confidence of those contacts', [
        ['', 'Any'],
        ['0.5', '50 % and up'],
        ['0.8', '80 % and up'],
        ['0.9', '90 % and up'],
      ])}
      ${select(form, 'min_lead_score', 'Lead score', [
        ['', 'Any'],
        ['0.3', '0.3 and up'],
        ['0.5', '0.5 and up'],
        ['0.7', '0.7 and up'],
      ])}
      ${textField(form, 'verified_since', 'Checked since', 'A contact checked on or after this day, e.g. 2026-11-01')}
      ${textField(form, 'updated_since', 'Changed since', 'The place changed on or after this day')}
    </fieldset>
    <div class="field">
      <label for="f-min_rating">Minimum rating</label>
      <select id="f-min_rating" name="min_rating">
        ${[
          ['', 'Any'],
          ['3', '3 and up'],
          ['4', '4 and up'],
          ['4.5', '4.5 and up'],
        ].map(([v, l]) => html`<option value="${v}"${rating === v ? html` selected` : ''}>${l}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="f-sort">Sort by</label>
      <select id="f-sort" name="sort">
        ${[
          ['relevance', 'Relevance'],
          ['rating', 'Rating'],
          ['review_count', 'Number of reviews'],
          ['lead_score', 'Lead score'],
          ['name', 'Name'],
        ].map(([v, l]) => html`<option value="${v}"${sort === v ? html` selected` : ''}>${l}</option>`)}
      </select>
    </div>
    <div class="form-actions"><button type="submit" class="button">Search</button></div>
  </form>`;
}

export function searchPage(ctx: PageContext, form: FormState, recent: SearchSummary[]): SafeHtml {
  return page(
    ctx,
    'Search places',
    html`<p class="lede">Find businesses by type and city. Every search is saved with its exact total, so you can page through it, see it on the map and export it.</p>
    ${errorSummary(form.errors, form.general)}
    ${searchForm(ctx, form)}
    ${recent.length > 0 ? html`<h2>Recent searches</h2>${searchesTable(ctx, recent, 'Your recent searches')}<p><a href="/searches">All searches and exports</a></p>` : ''}`,
    { scripts: ['suggest.js'] },
  );
}

/** `Restaurants in Monaco (MC)`: what a saved search looks for, from how its names resolved. */
export function searchTitle(params: SearchInput, resolution: SearchResolution): string {
  const what = resolution.type?.name ?? params.type ?? (params.query ? `“${params.query}”` : 'Places');
  const where = resolution.city
    ? `${resolution.city.chosen.name} (${resolution.city.chosen.country})`
    : (resolution.country?.name ?? params.country ?? '');
  return where ? `${what} in ${where}` : what;
}

function filtersText(params: SearchInput): string {
  const parts: string[] = [];
  if (params.query && (params.type || params.city)) parts.push(`name contains “${params.query}”`);
  if (params.has_phone) parts.push('with phone');
  if (params.has_website) parts.push('with website');
  if (params.has_email) parts.push('with email');
  if (params.has_social) parts.push('with social profile');
  if (params.open_now) parts.push('open at the time of the search');
  if (params.open_at) parts.push(`open at ${params.open_at} local time`);
  if (params.min_rating !== undefined) parts.push(`rating ≥ ${params.min_rating}`);
  if (params.email_status) parts.push(`best email: ${statusLabels[params.email_status]}`);
  if (params.phone_type) parts.push(`best phone: ${statusLabels[params.phone_type]}`);
  if (params.website_status) parts.push(`website ${statusLabels[params.website_status]}`);
  if (params.min_confidence !== undefined) parts.push(`confidence ≥ ${Math.round(params.min_confidence * 100)} %`);
  if (params.min_lead_score !== undefined) parts.push(`lead score ≥ ${params.min_lead_score}`);
  if (params.verified_since) parts.push(`checked since ${params.verified_since}`);
  if (params.updated_since) parts.push(`changed since ${params.updated_since}`);
  return parts.join(', ');
}

export function downloadButtons(ctx: PageContext, searchId: string, formats = downloadFormats): SafeHtml {
  // One form: the button pressed names the format, the checkbox goes with any of them.
  return html`<form method="post" action="/searches/${searchId}/export" class="inline-form downloads">
    ${csrfField(ctx)}${formats.map(
      (f) =>
        html`<button type="submit" name="format" value="${f.format}" class="button button-secondary button-small" data-testid="download-${f.format}">${f.label}</button>`,
    )}
    <label class="checkbox-inline"><input type="checkbox" name="only_new" value="true" data-testid="download-only-new"> only places not exported before</label>
  </form>`;
}

function searchesTable(ctx: PageContext, rows: SearchSummary[], caption: string): SafeHtml {
  return html`<div class="table-wrap"><table>
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Search</th><th scope="col">Filters</th><th scope="col" class="num">Total</th><th scope="col">Saved (UTC)</th><th scope="col">Download</th></tr></thead>
    <tbody>${rows.map((r) => {
      return html`<tr>
        <th scope="row"><a href="/searches/${r.id}">${searchTitle(r.params, r.resolution)}</a></th>
        <td>${filtersText(r.params) || html`<span class="muted">none</span>`}</td>
        <td class="num">${formatCount(r.total)}</td>
        <td>${time(r.createdAt, { compact: true })}</td>
        <td>${downloadButtons(ctx, r.id, downloadFormats.slice(0, 2))}</td>
      </tr>`;
    })}</tbody>
  </table></div>`;
}

export function searchesPage(ctx: PageContext, searches: SearchSummary[], exports: ExportSummary[]): SafeHtml {
  const statusLabel: Record<string, string> = { running: 'In progress', done: 'Complete', aborted: 'Cut short', failed: 'Failed' };
  return page(
    ctx,
    'Searches & exports',
    html`<p class="lede">Your saved searches and the files exported from them. Exported places become your leads, also available from the API at <code>/api/v1/user-api/places</code>.</p>
    <p><a class="button" href="/search">New search</a></p>
    <h2>Saved searches</h2>
    ${searches.length > 0 ? searchesTable(ctx, searches, 'Saved searches') : html`<p class="empty">No searches yet. <a href="/search">Run your first search</a>.</p>`}
    <h2>Exports</h2>
    ${
      exports.length > 0
        ? html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Exports</caption>
      <thead><tr><th scope="col">Export</th><th scope="col">Search</th><th scope="col">Format</th><th scope="col" class="num">Rows</th><th scope="col">Status</th><th scope="col">Started (UTC)</th><th scope="col">Download again</th></tr></thead>
      <tbody>${exports.map(
        (e) => html`<tr>
        <th scope="row"><code>${e.id}</code></th>
        <td><a href="/searches/${e.searchId}">${e.searchId}</a></td>
        <td>${e.format.toUpperCase()}</td>
        <td class="num">${formatCount(e.rows)}</td>
        <td>${statusLabel[e.status] ?? e.status}</td>
        <td>${time(e.createdAt, { compact: true })}</td>
        <td>${downloadButtons(
          ctx,
          e.searchId,
          downloadFormats.filter((f) => f.format === e.format),
        )}</td>
      </tr>`,
      )}</tbody></table></div>`
        : html`<p class="empty">No exports yet: open a search and pick a format.</p>`
    }`,
  );
}

/** A search's matches by city or by category (`marketChart` in dashboard.service.ts). */
export interface MarketChart {
  by: 'city' | 'category';
  /** Exact number of matches. */
  total: number;
  /** Largest first, then the other values together, then the matches without a value. */
  bars: Array<{
    label: string;
    count: number;
    /** The facets route's value (GeoNames id, category slug); null for the bars of other values and of none. */
    value: string | number | boolean | null;
  }>;
}

export interface ResultsView {
  search: SavedSearch;
  total: number;
  /** Matches the account's suppression list hides. */
  suppressed: number;
  places: Place[];
  /** 1-based position of the first row of this page. */
  offset: number;
  nextCursor: string | null;
  isFirstPage: boolean;
  map: SafeHtml;
  mapCaption: string;
  /** Absent when it could not be counted in time, or the search is one facets do not count. */
  chart: MarketChart | null;
}

/**
 * The market at a glance: the search's matches by city (or by category in one city) as bars, and the same
 * exact numbers in a table, which is the accessible form (the SVG is hidden from screen readers).
 */
function marketChartCard(chart: MarketChart): SafeHtml {
  const title = chart.by === 'city' ? 'Matches by city' : 'Matches by category';
  const share = (n: number) => `${((n / chart.total) * 100).toFixed(n / chart.total < 0.1 ? 1 : 0)} %`;
  return html`<figure class="card chart-card" data-testid="market-chart">
      <figcaption>${title}</figcaption>
      ${barChart(chart.bars)}
      <details>
        <summary>The same numbers as a table</summary>
        <div class="table-wrap"><table class="numbers">
          <caption class="visually-hidden">${title}, of ${formatCount(chart.total)} places</caption>
          <thead><tr><th scope="col">${chart.by === 'city' ? 'City' : 'Category'}</th><th scope="col" class="num">Places</th><th scope="col" class="num">Share</th></tr></thead>
          <tbody>${chart.bars.map(
            (b) =>
              html`<tr data-value="${b.value === null ? '' : String(b.value)}" data-count="${b.count}"><th scope="row">${b.label}</th><td class="num">${formatCount(b.count)}</td><td class="num">${share(b.count)}</td></tr>`,
          )}</tbody>
        </table></div>
      </details>
    </figure>`;
}

export function resultsPage(ctx: PageContext, v: ResultsView): SafeHtml {
  const { search } = v;
  const res = search.resolution;
  const alternatives = res.city?.alternatives ?? [];
  const filters = filtersText(search.params);
  return page(
    ctx,
    searchTitle(search.params, res),
    html`<div class="result-head">
      <p class="total" data-testid="total"><strong data-total="${v.total}">${formatCount(v.total)}</strong> ${v.total === 1 ? 'place' : 'places'}${filters ? ` · ${filters}` : ''}${v.suppressed > 0 ? html` · <span data-testid="suppressed">${formatCount(v.suppressed)} hidden by your suppression list</span>` : ''}</p>
      <div><span class="muted">Download all ${formatCount(v.total)}:</span> ${downloadButtons(ctx, search.id)}</div>
      <div>${exportJobForm(ctx, search.id)}</div>
    </div>
    <p class="resolution">${res.type ? html`Type <strong>${res.type.name}</strong>${res.type.includes.length > 1 ? html` (with ${res.type.includes.length - 1} more specific kinds)` : ''}. ` : ''}${
      res.city
        ? html`City <strong>${res.city.chosen.name}</strong>, ${res.city.chosen.country}${res.city.chosen.population > 0 ? html`, pop. ${formatCount(res.city.chosen.population)}` : ''}.${
            alternatives.length > 0
              ? html` Other places with that name: ${alternatives.slice(0, 4).map((a, i) => html`${i > 0 ? ', ' : ''}${a.name} (${a.country}${a.admin1 ? ` ${a.admin1}` : ''})`)}; add a country to choose.`
              : ''
          }`
        : ''
    } Saved ${time(search.createdAt)} as <code>${search.id}</code>.</p>
    <figure class="card map-card">
      ${v.map}
      <figcaption>${v.mapCaption}</figcaption>
    </figure>
    ${v.chart ? marketChartCard(v.chart) : ''}
    ${
      v.places.length > 0
        ? html`<div class="table-wrap"><table class="results">
      <caption>Places ${formatCount(v.offset)}–${formatCount(v.offset + v.places.length - 1)} of ${formatCount(v.total)}</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Category</th><th scope="col">Address</th><th scope="col">Phone</th><th scope="col">Email</th><th scope="col">Website</th><th scope="col">Social</th><th scope="col" class="num">Rating</th><th scope="col" class="num">Lead score</th></tr></thead>
      <tbody>${v.places.map(
        (p) => html`<tr>
        <th scope="row">${p.name}</th>
        <td>${p.category?.replaceAll('_', ' ') ?? '—'}</td>
        <td>${p.address ?? p.city ?? '—'}</td>
        <td class="nowrap">${p.phone_e164 ? html`<a href="tel:${p.phone_e164}">${p.phone ?? p.phone_e164}</a>` : (p.phone ?? '—')}${trustBadge(p.contacts.phones.find((c) => c.e164 === p.phone_e164))}</td>
        <td>${p.email ? html`<a href="mailto:${p.email}">${p.email}</a>${trustBadge(p.contacts.emails.find((c) => c.address.toLowerCase() === p.email!.toLowerCase()))}` : '—'}</td>
        <td>${p.website ? html`<a href="${safeUrl(p.website)}" rel="noopener noreferrer nofollow">${p.website.replace(/^https?:\/\/(www\.)?/, '').replace(/\/$/, '')}</a>${trustBadge(p.contacts.websites[0])}` : '—'}</td>
        <td>${p.contacts.socials.length > 0 ? p.contacts.socials.map((s, i) => html`${i > 0 ? ' ' : ''}<a href="${safeUrl(s.url)}" rel="noopener noreferrer nofollow">${s.network}</a>`) : '—'}</td>
        <td class="num">${p.rating ?? '—'}${p.review_count ? html` <span class="muted">(${p.review_count})</span>` : ''}</td>
        <td class="num" data-testid="lead-score">${p.lead_score === null || p.lead_score === undefined ? '—' : p.lead_score.toFixed(2)}</td>
      </tr>`,
      )}</tbody></table></div>`
        : html`<p class="empty">Nothing matches this search. Try a broader type, drop a filter, or check the city.</p>`
    }
    <nav class="pager" aria-label="Result pages">
      ${v.isFirstPage ? '' : html`<a class="button button-quiet" href="/searches/${search.id}">First page</a>`}
      ${v.nextCursor ? html`<a class="button button-secondary" href="/searches/${search.id}?cursor=${encodeURIComponent(v.nextCursor)}&amp;from=${v.offset + v.places.length}" rel="next">Next page</a>` : ''}
    </nav>`,
  );
}
