import type { FieldError } from '../../infra/errors.ts';
import type { SuppressionsAdded, SuppressionsPage } from '../suppressions/suppressions.schema.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, errorSummary, formatCount, type PageContext, page, time } from './layout.ts';

/** What an upload came to: the service's answer, or its refusal with one entry per invalid line. */
export type UploadOutcome = { ok: true; result: SuppressionsAdded } | { ok: false; message: string; errors: FieldError[] };

export interface SuppressionsView {
  list: SuppressionsPage;
  /** Set on the page a POST answers with. */
  upload?: UploadOutcome;
  /** Values of the upload form to keep (country, on_invalid). */
  values?: { country?: string; on_invalid?: string };
  notice?: string;
  /** Errors of the remove-all form (the confirmation box). */
  removeAllError?: string;
  /** 1-based position of the first row of this page. */
  offset: number;
  isFirstPage: boolean;
}

const kindLabels = { phone: 'Phone numbers', domain: 'Domains', email: 'Emails', place: 'Places' } as const;

/** `body.line 17` (a refusal) or `line 17` (a skipped entry): the line number, as the API names it. */
function lineOf(at: string): string {
  const m = /line (\d+)$/.exec(at);
  return m ? `Line ${m[1]}` : at.replace(/^body\.?/, '') || 'The file';
}

function outcome(o: UploadOutcome): SafeHtml {
  if (!o.ok) {
    const lines = o.errors.filter((e) => /line \d+$/.test(e.field));
    return html`<div class="alert alert-error" role="alert" tabindex="-1" data-testid="upload-refused">
      <h2>Nothing was added</h2>
      <p>${o.message}</p>
      ${lines.length > 0 ? html`<ul data-testid="invalid-lines">${lines.map((e) => html`<li>${lineOf(e.field)}: ${e.message}</li>`)}</ul>` : ''}
    </div>`;
  }
  const r = o.result;
  return html`<div class="alert alert-success" role="status" data-testid="upload-result">
    <p><strong data-testid="added" data-added="${r.added}">${formatCount(r.added)} ${r.added === 1 ? 'entry' : 'entries'} added</strong> of ${formatCount(r.received)} read${
      r.duplicates > 0 ? html`; ${formatCount(r.duplicates)} already on the list` : ''
    }${r.rejected > 0 ? html`; ${formatCount(r.rejected)} invalid ${r.rejected === 1 ? 'line was' : 'lines were'} skipped` : ''}.</p>
    ${
      r.rejected_entries.length > 0
        ? html`<ul data-testid="invalid-lines">${r.rejected_entries.map((e) => html`<li>${lineOf(e.at)}: ${JSON.stringify(e.value)} ${e.message}</li>`)}</ul>${
            r.rejected > r.rejected_entries.length
              ? html`<p class="muted">The first ${formatCount(r.rejected_entries.length)} are listed.</p>`
              : ''
          }`
        : ''
    }
  </div>`;
}

export function suppressionsPage(ctx: PageContext, v: SuppressionsView): SafeHtml {
  const { counts, data, next_cursor } = v.list;
  const onInvalid = v.values?.on_invalid === 'skip' ? 'skip' : 'reject';
  return page(
    ctx,
    'Suppressions',
    html`<p class="lede">Phone numbers, domains, email addresses and places on this list never show in your searches, exports or leads, in the dashboard and through the API.</p>
    ${v.notice ? html`<div class="alert alert-success" role="status">${v.notice}</div>` : ''}
    ${v.upload ? outcome(v.upload) : ''}
    <div class="stats" data-testid="suppression-counts">
      ${(['phone', 'domain', 'email', 'place'] as const).map(
        (k) =>
          html`<div class="stat"><span class="stat-value" data-count="${k}">${formatCount(counts[k])}</span><span class="stat-label">${kindLabels[k]}</span></div>`,
      )}
    </div>
    <form method="post" action="/suppressions/upload" enctype="multipart/form-data" class="card" novalidate>
      <h2>Upload a CSV file</h2>
      ${csrfField(ctx)}
      <div class="field">
        <label for="f-country">Country of numbers written without their +country code <span class="optional">(optional)</span></label>
        <p class="hint" id="f-country-hint">Two letters, e.g. MC or DE: <code>93 15 00 00</code> with MC is +377 93 15 00 00.</p>
        <input id="f-country" name="country" type="text" maxlength="2" value="${v.values?.country ?? ''}" aria-describedby="f-country-hint" autocomplete="off">
      </div>
      <fieldset class="field">
        <legend>If a line is not valid</legend>
        <div class="check"><input type="radio" id="on-invalid-reject" name="on_invalid" value="reject"${onInvalid === 'reject' ? html` checked` : ''}><label for="on-invalid-reject">add nothing, and list the invalid lines</label></div>
        <div class="check"><input type="radio" id="on-invalid-skip" name="on_invalid" value="skip"${onInvalid === 'skip' ? html` checked` : ''}><label for="on-invalid-skip">add the valid lines and list the others</label></div>
      </fieldset>
      <div class="field">
        <label for="f-file">CSV file</label>
        <p class="hint" id="f-file-hint">One value a line (its type is recognised), or <code>type,value[,country]</code> with a type of phone, domain, email or place, or a header row (<code>type,value,country</code>, or just <code>phone</code>). Up to 2,000,000 lines.</p>
        <input id="f-file" name="file" type="file" accept=".csv,.txt,text/csv,text/plain" required aria-describedby="f-file-hint">
      </div>
      <button type="submit" class="button">Upload</button>
    </form>
    <h2>Entries</h2>
    ${
      data.length === 0
        ? html`<p class="empty">${counts.total === 0 ? 'Your suppression list is empty.' : 'No more entries.'}</p>`
        : html`<div class="table-wrap"><table data-testid="suppressions">
      <caption>Entries ${formatCount(v.offset)}–${formatCount(v.offset + data.length - 1)} of ${formatCount(counts.total)}, oldest first <span class="muted">(times in UTC)</span></caption>
      <thead><tr><th scope="col">Value</th><th scope="col">Type</th><th scope="col">Matched as</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${data.map(
        (e) => html`<tr>
        <th scope="row">${e.value}</th>
        <td>${e.type}</td>
        <td><code>${e.key}</code></td>
        <td>${time(e.created_at, { compact: true })}</td>
        <td class="actions"><form method="post" action="/suppressions/${e.id}/remove" class="inline-form">
          ${csrfField(ctx)}
          <button type="submit" class="button button-secondary button-small">Remove<span class="visually-hidden"> ${e.value}</span></button>
        </form></td>
      </tr>`,
      )}</tbody></table></div>`
    }
    <nav class="pager" aria-label="Entry pages">
      ${v.isFirstPage ? '' : html`<a class="button button-quiet" href="/suppressions">First page</a>`}
      ${next_cursor ? html`<a class="button button-secondary" href="/suppressions?cursor=${encodeURIComponent(next_cursor)}&amp;from=${v.offset + data.length}" rel="next">Next page</a>` : ''}
    </nav>
    ${
      counts.total > 0
        ? html`<form method="post" action="/suppressions/remove-all" class="card" novalidate>
      <h2>Remove every entry</h2>
      ${csrfField(ctx)}
      ${v.removeAllError ? errorSummary([{ field: 'confirm', message: v.removeAllError }]) : ''}
      <div class="check${v.removeAllError ? ' field-error' : ''}"><input type="checkbox" id="f-confirm" name="confirm" value="yes"${v.removeAllError ? html` aria-invalid="true"` : ''}>
        <label for="f-confirm">I understand: remove ${counts.total === 1 ? 'the 1 entry' : `all ${formatCount(counts.total)} entries`}, and their places show in my searches again</label></div>
      <button type="submit" class="button button-danger">Remove all</button>
    </form>`
        : ''
    }`,
  );
}
