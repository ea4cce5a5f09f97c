import type { FieldError } from '../../infra/errors.ts';
import { type HtmlValue, html, type SafeHtml } from './html.ts';

/** What every page needs to know about the request. */
export interface PageContext {
  /** The signed-in account's email, null on the public pages. */
  email: string | null;
  /** The token every form posts back as `_csrf`. */
  csrfToken: string;
  /** The current path, to mark the navigation entry. */
  path: string;
  /** Cache-busting suffix of the asset URLs. */
  assetVersion: string;
}

const nav: Array<{ href: string; label: string }> = [
  { href: '/search', label: 'Search' },
  { href: '/searches', label: 'Searches & exports' },
  { href: '/exports', label: 'Export jobs' },
  { href: '/match', label: 'Match a list' },
  { href: '/monitors', label: 'Monitors' },
  { href: '/suppressions', label: 'Suppressions' },
  { href: '/tokens', label: 'API tokens' },
  { href: '/usage', label: 'Usage' },
  { href: '/account/password', label: 'Account' },
];

/** `/tokens/new` belongs to `/tokens`; `/searches/…` does not belong to `/search`. */
function isCurrent(path: string, href: string): boolean {
  return path === href || path.startsWith(`${href}/`);
}

export function page(ctx: PageContext, title: string, body: HtmlValue, options: { scripts?: string[] } = {}): SafeHtml {
  const scripts = (options.scripts ?? []).map((s) => html`<script src="/assets/${s}?v=${ctx.assetVersion}" defer></script>`);
  const header = ctx.email
    ? html`<nav class="nav" aria-label="Main">
        <ul>${nav.map((n) => html`<li><a href="${n.href}"${isCurrent(ctx.path, n.href) ? html` aria-current="page"` : ''}>${n.label}</a></li>`)}</ul>
      </nav>
      <form class="signout" method="post" action="/signout">
        ${csrfField(ctx)}
        <span class="who">${ctx.email}</span>
        <button type="submit" class="button button-quiet">Sign out</button>
      </form>`
    : html`<nav class="nav" aria-label="Main"><ul>
        <li><a href="/signin"${ctx.path === '/signin' ? html` aria-current="page"` : ''}>Sign in</a></li>
        <li><a href="/signup"${ctx.path === '/signup' ? html` aria-current="page"` : ''}>Create account</a></li>
      </ul></nav>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · LeadAtlas</title>
<link rel="stylesheet" href="/assets/app.css?v=${ctx.assetVersion}">
<link rel="icon" href="/assets/favicon.svg?v=${ctx.assetVersion}" type="image/svg+xml">
${scripts}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/"><span class="brand-mark" aria-hidden="true"></span>LeadAtlas</a>
  ${header}
</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
<footer class="foot">
  <p>LeadAtlas · business data from OpenStreetMap (ODbL) and other open sources · <a href="/docs">API reference</a></p>
</footer>
</body>
</html>`;
}

export function csrfField(ctx: PageContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrfToken}">`;
}

/** A summary of what is wrong, announced when the page loads; each entry links to its field. */
export function errorSummary(errors: FieldError[], general?: string): SafeHtml | '' {
  if (errors.length === 0 && !general) return '';
  return html`<div class="alert alert-error" role="alert" tabindex="-1">
    <h2>There is a problem</h2>
    ${general ? html`<p>${general}</p>` : ''}
    ${errors.length > 0 ? html`<ul>${errors.map((e) => html`<li><a href="#f-${e.field}">${fieldLabel(e.field)} ${e.message}</a></li>`)}</ul>` : ''}
  </div>`;
}

function fieldLabel(field: string): string {
  const name = field.replace(/^body\./, '').replaceAll('_', ' ');
  return name.charAt(0).toUpperCase() + name.slice(1);
}

export interface FieldOptions {
  name: string;
  label: string;
  type?: string;
  value?: string | number | null;
  hint?: string;
  errors?: FieldError[];
  required?: boolean;
  autocomplete?: string;
  min?: number;
  max?: number;
  placeholder?: string;
  list?: string;
}

/** A labelled input with its hint and error wired up through aria-describedby. */
export function field(o: FieldOptions): SafeHtml {
  const id = `f-${o.name}`;
  const error = o.errors?.find((e) => e.field === o.name || e.field === `body.${o.name}`);
  const describedBy = [o.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${error ? ' field-error' : ''}">
  <label for="${id}">${o.label}${o.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  ${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ''}
  ${error ? html`<p class="error" id="${id}-error"><span class="visually-hidden">Error:</span> ${error.message}</p>` : ''}
  <input id="${id}" name="${o.name}" type="${o.type ?? 'text'}"${o.value !== undefined && o.value !== null ? html` value="${String(o.value)}"` : ''}${
    o.required ? html` required` : ''
  }${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${o.min !== undefined ? html` min="${o.min}"` : ''}${o.max !== undefined ? html` max="${o.max}"` : ''}${
    o.placeholder ? html` placeholder="${o.placeholder}"` : ''
  }${o.list ? html` list="${o.list}"` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}${error ? html` aria-invalid="true"` : ''}>
</div>`;
}

/**
 * `2026-11-21T05:49:00.000Z` → `2026-11-21 05:49 UTC` inside a <time> element; `compact` drops the
 * zone (tables say "UTC" once in their caption) and `dateOnly` the time, keeping it in the title.
 */
export function time(iso: string | null, options: { compact?: boolean; dateOnly?: boolean } = {}): SafeHtml {
  if (!iso) return html`—`;
  const full = `${iso.slice(0, 16).replace('T', ' ')} UTC`;
  const shown = options.dateOnly ? iso.slice(0, 10) : options.compact ? iso.slice(0, 16).replace('T', ' ') : full;
  return html`<time datetime="${iso}" title="${full}">${shown}</time>`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en');
}
