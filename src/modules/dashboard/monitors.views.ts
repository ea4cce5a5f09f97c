import type { FieldError } from '../../infra/errors.ts';
import type { MonitorView } from '../monitors/monitors.schema.ts';
import type { SearchSummary } from '../search/saved-searches.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, errorSummary, formatCount, type PageContext, page, time } from './layout.ts';

export interface MonitorsPageView {
  monitors: Array<{ monitor: MonitorView; events: Array<{ kind: string; at: string; name: string; placeId: string }> }>;
  searches: SearchSummary[];
  error?: { message: string; errors: FieldError[] };
}

const kindLabel: Record<string, string> = { added: 'Added', closed: 'Closed', changed: 'Changed' };

/** What a saved search asked, in a few words (type, city, country, query). */
function searchLabel(s: SearchSummary): string {
  const p = s.params as Record<string, unknown>;
  const parts = ['type', 'query', 'city', 'country'].map((k) => p[k]).filter((v): v is string => typeof v === 'string' && v !== '');
  return `${parts.join(' · ') || s.id} (${formatCount(s.total)} places)`;
}

export function monitorsPage(ctx: PageContext, view: MonitorsPageView): SafeHtml {
  return page(
    ctx,
    'Monitors',
    html`<p class="lede">A monitor watches a saved search and records each place that enters it, leaves it (closed, retired, no longer matching) or changes in it, after every import or change file. The API's <code>/api/v2/monitors/{id}/events</code> gives the same events by cursor.</p>
    ${view.error ? errorSummary(view.error.errors, view.error.message) : ''}
    <h2>Watch a saved search</h2>
    ${
      view.searches.length === 0
        ? html`<p class="empty">No saved searches yet: <a href="/search">run a search</a> first.</p>`
        : html`<form method="post" action="/monitors" class="inline-form" data-testid="new-monitor">
      ${csrfField(ctx)}
      <label for="monitor-search">Search</label>
      <select id="monitor-search" name="search_id">${view.searches.map((s) => html`<option value="${s.id}">${searchLabel(s)}</option>`)}</select>
      <label for="monitor-webhook" class="visually-hidden">Webhook URL (optional)</label>
      <input id="monitor-webhook" name="webhook_url" type="url" placeholder="https://… webhook (optional)" maxlength="2048">
      <button type="submit" class="button button-small">Watch</button>
    </form>`
    }
    <h2>Your monitors</h2>
    ${
      view.monitors.length === 0
        ? html`<p class="empty">No monitors yet.</p>`
        : html`<div class="table-wrap"><table data-testid="monitors">
      <caption class="visually-hidden">Monitors</caption>
      <thead><tr><th scope="col">Monitor</th><th scope="col">Search</th><th scope="col" class="num">Places</th><th scope="col">Status</th><th scope="col">Last events</th><th scope="col">Actions</th></tr></thead>
      <tbody>${view.monitors.map(
        ({ monitor, events }) => html`<tr data-monitor="${monitor.id}">
        <th scope="row"><code>${monitor.id}</code><br><span class="muted">since ${time(monitor.created_at, { compact: true })}</span></th>
        <td><a href="/searches/${monitor.search_id}">${monitor.search_id}</a></td>
        <td class="num">${formatCount(monitor.places)}</td>
        <td>${monitor.status === 'active' ? 'Active' : 'Paused'}${monitor.webhook_url ? html`<br><span class="muted">webhook to ${monitor.webhook_url}</span>` : ''}</td>
        <td>${
          events.length === 0
            ? html`<span class="muted">none yet</span>`
            : html`<ul>${events.map((e) => html`<li>${kindLabel[e.kind] ?? e.kind}: <a href="/api/v1/places/${e.placeId}">${e.name}</a> <span class="muted">${time(e.at, { compact: true })}</span></li>`)}</ul>`
        }</td>
        <td>
          <form method="post" action="/monitors/${monitor.id}/${monitor.status === 'active' ? 'pause' : 'resume'}" class="inline-form">${csrfField(ctx)}<button type="submit" class="button button-quiet button-small">${monitor.status === 'active' ? 'Pause' : 'Resume'}</button></form>
          <form method="post" action="/monitors/${monitor.id}/delete" class="inline-form">${csrfField(ctx)}<button type="submit" class="button button-quiet button-small">Delete</button></form>
        </td>
      </tr>`,
      )}</tbody></table></div>`
    }`,
  );
}
