/**
 * Server-side HTML with escaping by default. `html` is a tagged template: every interpolated value is
 * escaped unless it is itself the result of `html` (or `raw`), so a template cannot forget to escape.
 *
 *   html`<p title="${userText}">${userText}</p>`   // both escaped
 *   html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`   // arrays of fragments are joined
 */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Escapes text for an element body or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => entities[c] as string);
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i] as HtmlValue) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Marks markup built elsewhere (an SVG the server drew) as safe. Never pass user input. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** An href that can only be a same-site path or an http(s) URL: `javascript:` and friends become `#`. */
export function safeUrl(url: string): string {
  return /^(\/(?!\/)|https?:\/\/)/i.test(url) ? url : '#';
}
