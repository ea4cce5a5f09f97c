import type { MatchJobView } from '../match/match-jobs.schema.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, formatCount, type PageContext, page, time } from './layout.ts';

const jobStatus: Record<string, string> = { queued: 'Queued', running: 'Matching', succeeded: 'Ready', failed: 'Failed' };

export interface MatchPageView {
  jobs: MatchJobView[];
  /** The job just uploaded, shown first with the columns recognised. */
  current?: MatchJobView;
  error?: string;
}

function mappingTable(job: MatchJobView): SafeHtml {
  const entries = Object.entries(job.mapping);
  return html`<div class="table-wrap"><table data-testid="mapping">
    <caption>The columns of <strong>${job.file_name}</strong> as they were recognised</caption>
    <thead><tr><th scope="col">Field</th><th scope="col">Column of your list</th></tr></thead>
    <tbody>${entries.map(([field, header]) => html`<tr><th scope="row">${field}</th><td>${header}</td></tr>`)}</tbody>
  </table></div>
  <p class="hint">Columns not listed (${job.headers.filter((h) => !entries.some(([, header]) => header === h)).join(', ') || 'none'}) are kept in the file as they are. The API's <code>mapping</code> names columns the headers do not say.</p>`;
}

function summary(job: MatchJobView): SafeHtml {
  const p = job.progress;
  return html`<span data-testid="match-summary">${formatCount(p.done)} of ${formatCount(job.rows)} rows: ${formatCount(p.matched)} matched (${formatCount(p.closed)} closed), ${formatCount(p.unmatched)} unmatched, ${formatCount(p.bad_rows)} bad</span>`;
}

/** The "Match a list" page: the upload form, the job just uploaded with its mapping, and the account's jobs. */
export function matchPage(ctx: PageContext, view: MatchPageView): SafeHtml {
  const { current } = view;
  return page(
    ctx,
    'Match a list',
    html`<p class="lede">Upload your accounts (CSV, XLSX or NDJSON, a header row first): each row comes back, in order, with the LeadAtlas place it is, a score, and the catalog's category, status, phone, email, website and social profiles. The API's <code>POST /api/v2/match/jobs</code> does the same.</p>
    ${view.error ? html`<p class="error" role="alert" data-testid="match-error">${view.error}</p>` : ''}
    <form method="post" action="/match/upload" enctype="multipart/form-data" class="card" data-testid="match-form">
      ${csrfField(ctx)}
      <p><label><input type="checkbox" name="as_leads" value="true"> Mark the matched places as my leads (searches and exports with “only new” leave them out)</label></p>
      <p><label for="match-file">List</label> <input id="match-file" name="file" type="file" accept=".csv,.xlsx,.ndjson,.jsonl,.txt" required></p>
      <button type="submit" class="button" data-testid="match-upload">Match</button>
    </form>
    ${current ? html`<section class="card" data-testid="match-current"><h2>${current.file_name}</h2>${mappingTable(current)}<p>${jobStatus[current.status] ?? current.status}: ${summary(current)} — <a href="/match">refresh</a></p></section>` : ''}
    <h2>Lists</h2>
    ${
      view.jobs.length === 0
        ? html`<p class="empty">No list matched yet.</p>`
        : html`<div class="table-wrap"><table data-testid="match-jobs">
      <caption class="visually-hidden">Match jobs</caption>
      <thead><tr><th scope="col">List</th><th scope="col">Status</th><th scope="col">Rows</th><th scope="col">Created (UTC)</th><th scope="col">File</th></tr></thead>
      <tbody>${view.jobs.map(
        (job) => html`<tr data-job="${job.id}">
        <th scope="row">${job.file_name}<br><code class="muted">${job.id}</code></th>
        <td data-testid="match-status">${jobStatus[job.status] ?? job.status}${job.failure ? html`: <span class="muted">${job.failure}</span>` : ''}</td>
        <td>${summary(job)}</td>
        <td>${time(job.created_at, { compact: true })}</td>
        <td>${job.download ? html`<a href="${job.download.url}" data-testid="match-download">Download</a>` : '—'}</td>
      </tr>`,
      )}</tbody></table></div>`
    }`,
  );
}
