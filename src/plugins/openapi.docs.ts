/**
 * A readable API reference rendered on the server from the OpenAPI document: one HTML page, inline
 * CSS, no scripts, no CDN. It shows what a client needs: each operation with its parameters, body,
 * responses and the fields of each schema.
 */

export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
}

interface MediaType {
  schema?: JsonSchema;
}

export interface OpenApiOperation {
  tags?: string[];
  summary?: string;
  description?: string;
  operationId?: string;
  security?: unknown[];
  parameters?: Array<{
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: JsonSchema;
    examples?: Record<string, { value?: unknown }>;
  }>;
  requestBody?: { content?: Record<string, MediaType>; required?: boolean };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType>; headers?: Record<string, unknown> }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  tags?: Array<{ name: string; description?: string }>;
  paths?: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema>; headers?: Record<string, { description?: string; schema?: JsonSchema }> };
}

const esc = (v: unknown): string =>
  String(v).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** Inline code in descriptions: `x` → <code>x</code>, after escaping. */
const prose = (text: string | undefined): string =>
  text
    ? esc(text)
        .replace(/`([^`]+)`/g, '<code>$1</code>')
        .split(/\n{2,}/)
        .map((p) => `<p>${p}</p>`)
        .join('')
    : '';

function refName(ref: string): string {
  return ref.split('/').pop() ?? ref;
}

/** A one-line type: `string`, `integer 1–100`, `"a" | "b"`, `Place[]`, `string | null`. */
export function typeLabel(s: JsonSchema | undefined): string {
  if (!s) return 'any';
  if (s.$ref) return `<a href="#schema-${esc(refName(s.$ref))}">${esc(refName(s.$ref))}</a>`;
  if (s.const !== undefined) return `<code>${esc(JSON.stringify(s.const))}</code>`;
  if (s.enum) return s.enum.map((e) => `<code>${esc(JSON.stringify(e))}</code>`).join(' | ');
  const union = s.anyOf ?? s.oneOf;
  if (union) return union.map(typeLabel).join(' | ');
  if (s.allOf) return s.allOf.map(typeLabel).join(' &amp; ');
  const type = Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? (s.properties ? 'object' : 'any'));
  if (type === 'array') return `${typeLabel(s.items)}[]`;
  const range = s.minimum !== undefined || s.maximum !== undefined ? ` ${s.minimum ?? ''}–${s.maximum ?? ''}` : '';
  return `${esc(type)}${range}${s.format ? ` (${esc(s.format)})` : ''}`;
}

function notes(s: JsonSchema | undefined): string {
  if (!s) return '';
  const out: string[] = [];
  if (s.description) out.push(prose(s.description));
  if (s.default !== undefined) out.push(`<p>Default: <code>${esc(JSON.stringify(s.default))}</code></p>`);
  if (s.pattern) out.push(`<p>Pattern: <code>${esc(s.pattern)}</code></p>`);
  if (s.examples?.length)
    out.push(`<p>Example: ${s.examples.map((e) => `<code>${esc(typeof e === 'string' ? e : JSON.stringify(e))}</code>`).join(', ')}</p>`);
  return out.join('');
}

function fieldsTable(schema: JsonSchema | undefined): string {
  if (!schema?.properties) return schema ? `<p>${typeLabel(schema)}</p>${notes(schema)}` : '';
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties)
    .map(
      ([name, s]) =>
        `<tr><td><code>${esc(name)}</code>${required.has(name) ? '' : ' <small>optional</small>'}</td><td>${typeLabel(s)}</td><td>${notes(s)}${nested(s)}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Description</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** Fields of an inline object (or array of objects) one level down, so nested shapes are readable too. */
function nested(s: JsonSchema): string {
  const inner = s.type === 'array' ? s.items : s;
  const obj = inner?.properties ? inner : (inner?.anyOf ?? []).find((a) => a.properties);
  return obj?.properties ? `<details><summary>fields</summary>${fieldsTable(obj)}</details>` : '';
}

function operation(method: string, path: string, op: OpenApiOperation): string {
  const id = op.operationId ?? `${method}-${path}`;
  const params = op.parameters ?? [];
  const paramRows = params
    .map((p) => {
      // The generator moves a parameter's examples out of its schema.
      const examples = Object.values(p.examples ?? {}).map((e) => e.value);
      const schema = examples.length > 0 ? { ...p.schema, examples } : p.schema;
      return `<tr><td><code>${esc(p.name)}</code> <small>${esc(p.in)}${p.required ? ', required' : ''}</small></td><td>${typeLabel(p.schema)}</td><td>${prose(p.description)}${notes(schema)}</td></tr>`;
    })
    .join('');
  const body = op.requestBody?.content ? Object.entries(op.requestBody.content) : [];
  const responses = Object.entries(op.responses ?? {})
    .map(([status, r]) => {
      const media = Object.entries(r.content ?? {});
      const detail = media
        .map(
          ([type, m]) =>
            `<p><small>${esc(type)}</small></p>${status.startsWith('2') ? fieldsTable(m.schema) : `<p>${typeLabel(m.schema)}</p>`}`,
        )
        .join('');
      return `<li><strong>${esc(status)}</strong> ${prose(r.description)}${detail}</li>`;
    })
    .join('');
  return `<section class="op" id="${esc(id)}">
<h3><span class="method ${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>
<p class="summary">${esc(op.summary ?? '')}</p>${prose(op.description)}
${paramRows ? `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>Type</th><th>Description</th></tr></thead><tbody>${paramRows}</tbody></table>` : ''}
${body.map(([type, m]) => `<h4>Request body <small>${esc(type)}</small></h4>${fieldsTable(m.schema)}`).join('')}
<h4>Responses</h4><ul class="responses">${responses}</ul>
</section>`;
}

/** The page's only style sheet, inline: the page's Content-Security-Policy allows it by its hash. */
export const docsCss = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:grid;grid-template-columns:18rem 1fr;color:#1d2330}
nav{position:sticky;top:0;height:100vh;overflow:auto;padding:1rem;background:#f4f6f9;border-right:1px solid #dde2ea;font-size:13px}
nav ul{list-style:none;padding-left:.8rem}main{padding:1rem 2rem;max-width:60rem}
code{background:#eef1f5;padding:0 .25em;border-radius:3px;font-size:90%}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #dde2ea;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f6f9}.op{border-top:1px solid #dde2ea;padding-top:.5rem;margin-top:1.5rem}
.method{display:inline-block;min-width:3.5rem;text-align:center;color:#fff;border-radius:3px;font-size:13px;padding:.1rem .3rem}
.get{background:#2f7d32}.post{background:#1f5fa8}.put,.patch{background:#9a6700}.delete{background:#b3261e}
.summary{font-weight:600}td p,li p{margin:.2rem 0}small{color:#5b6576}
`;

export function renderDocsPage(doc: OpenApiDocument): string {
  const ops: Array<{ tag: string; method: string; path: string; op: OpenApiOperation }> = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) ops.push({ tag: op.tags?.[0] ?? 'other', method, path, op });
  }
  const tags = [...new Set([...(doc.tags ?? []).map((t) => t.name), ...ops.map((o) => o.tag)])];
  const tagDescription = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
  const toc = tags
    .map(
      (t) =>
        `<li>${esc(t)}<ul>${ops
          .filter((o) => o.tag === t)
          .map(
            (o) =>
              `<li><a href="#${esc(o.op.operationId ?? `${o.method}-${o.path}`)}">${esc(o.method.toUpperCase())} ${esc(o.path)}</a></li>`,
          )
          .join('')}</ul></li>`,
    )
    .join('');
  const sections = tags
    .map(
      (t) =>
        `<h2 id="tag-${esc(t)}">${esc(t)}</h2>${prose(tagDescription.get(t))}${ops
          .filter((o) => o.tag === t)
          .map((o) => operation(o.method, o.path, o.op))
          .join('')}`,
    )
    .join('');
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(([name, s]) => `<section id="schema-${esc(name)}"><h3>${esc(name)}</h3>${prose(s.description)}${fieldsTable(s)}</section>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} reference</title>
<style>${docsCss}</style></head><body>
<nav><strong>${esc(doc.info.title)}</strong> <small>${esc(doc.info.version)}</small><ul>${toc}<li><a href="#schemas">Schemas</a></li></ul>
<p><a href="/openapi.json">openapi.json</a> (OpenAPI ${esc(doc.openapi)})</p></nav>
<main><h1>${esc(doc.info.title)}</h1>${prose(doc.info.description)}
${sections}
<h2 id="schemas">Schemas</h2>${schemas}
</main></body></html>`;
}
