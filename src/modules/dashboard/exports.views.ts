import type { JobOverview } from '../exports/export-jobs.service.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, formatCount, type PageContext, page, time } from './layout.ts';

/** A job as the Exports page shows it: its deliveries with their attempts, and a download link once done. */
export type JobListItem = JobOverview;

const jobStatus: Record<string, string> = { queued: 'Queued', running: 'Running', succeeded: 'Ready', failed: 'Failed' };
const deliveryStatus: Record<string, string> = {
  pending: 'Retrying',
  succeeded: 'Delivered',
  failed: 'Gave up',
  refused: 'Refused (address not allowed)',
};

/** The form on a search's page that starts a background export. */
export function exportJobForm(ctx: PageContext, searchId: string): SafeHtml {
  return html`<form method="post" action="/searches/${searchId}/jobs" class="inline-form job-form">
    ${csrfField(ctx)}
    <label for="job-format">Background export</label>
    <select id="job-format" name="format">
      <option value="csv">CSV</option><option value="xlsx">XLSX</option><option value="json">JSON</option><option value="ndjson">NDJSON</option><option value="geojson">GeoJSON</option>
    </select>
    <label for="job-webhook" class="visually-hidden">Webhook URL (optional)</label>
    <input id="job-webhook" name="webhook_url" type="url" placeholder="https://… webhook (optional)" maxlength="2048">
    <button type="submit" class="button button-secondary button-small" data-testid="start-job">Start job</button>
  </form>`;
}

export function exportJobsPage(ctx: PageContext, items: JobListItem[], secret: string, notice?: string): SafeHtml {
  return page(
    ctx,
    'Export jobs',
    html`<p class="lede">Files written in the background from your saved searches. A ready file downloads through a signed link that works for 24 hours without a token; the API's <code>POST /api/v2/exports</code> starts the same jobs.</p>
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
    <h2>Webhook signing secret</h2>
    <p>Every webhook is signed with this secret in its <code>LeadAtlas-Signature</code> header (how to check it: the exports section of the API reference).</p>
    <div class="copy-row">
      <input id="webhook-secret" class="token-value" readonly value="${secret}" aria-label="Webhook signing secret" data-testid="webhook-secret">
      <button type="button" class="button" data-copy="webhook-secret">Copy</button>
    </div>
    <p class="copy-status" role="status" aria-live="polite" data-for="webhook-secret"></p>
    <form method="post" action="/exports/webhook-secret" class="inline-form">
      ${csrfField(ctx)}
      <button type="submit" class="button button-quiet" data-testid="rotate-secret">Rotate the secret</button>
    </form>
    <h2>Jobs</h2>
    ${
      items.length === 0
        ? html`<p class="empty">No export jobs yet: open a search and start one.</p>`
        : html`<div class="table-wrap"><table data-testid="jobs">
      <caption class="visually-hidden">Export jobs</caption>
      <thead><tr><th scope="col">Job</th><th scope="col">Search</th><th scope="col">Format</th><th scope="col" class="num">Rows</th><th scope="col">Status</th><th scope="col">Created (UTC)</th><th scope="col">File</th><th scope="col">Webhook deliveries</th></tr></thead>
      <tbody>${items.map(
        ({ job, deliveries }) => html`<tr data-job="${job.id}">
        <th scope="row"><code>${job.id}</code></th>
        <td><a href="/searches/${job.search_id}">${job.search_id}</a></td>
        <td>${job.format.toUpperCase()}</td>
        <td class="num">${formatCount(job.rows)}${job.limited ? html` <span class="muted">(monthly quota reached)</span>` : ''}</td>
        <td data-testid="job-status">${jobStatus[job.status] ?? job.status}${job.failure ? html`: <span class="muted">${job.failure}</span>` : ''}</td>
        <td>${time(job.created_at, { compact: true })}</td>
        <td>${job.download ? html`<a href="${job.download.url}" data-testid="job-download" download>Download</a>` : html`<span class="muted">—</span>`}</td>
        <td>${
          job.webhook_url === null
            ? html`<span class="muted">none</span>`
            : deliveries.length === 0
              ? html`<span class="muted">when the job ends, to ${job.webhook_url}</span>`
              : deliveries.map(
                  ({ attempts, ...delivery }) => html`<details>
              <summary>${deliveryStatus[delivery.status] ?? delivery.status} · ${attempts.length} attempt${attempts.length === 1 ? '' : 's'}</summary>
              <p class="muted">${delivery.event} to ${delivery.url}${delivery.nextAttemptAt ? html` · next attempt ${time(delivery.nextAttemptAt, { compact: true })}` : ''}</p>
              <ol>${attempts.map((a) => html`<li>${time(a.at, { compact: true })}: ${a.responseStatus === null ? 'no answer' : `HTTP ${a.responseStatus}`} (${a.outcome}${a.error ? `: ${a.error}` : ''}), ${a.durationMs} ms</li>`)}</ol>
            </details>`,
                )
        }</td>
      </tr>`,
      )}</tbody></table></div>`
    }`,
  );
}
