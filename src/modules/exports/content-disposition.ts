/**
 * `attachment; filename="…"` with an ASCII fallback, plus RFC 5987/6266 `filename*=UTF-8''…` when the
 * real name is not plain ASCII (browsers prefer `filename*`; old clients read `filename`).
 */
export function attachmentDisposition(filename: string): string {
  const ascii = asciiFallback(filename);
  const header = `attachment; filename="${ascii}"`;
  return ascii === filename ? header : `${header}; filename*=UTF-8''${encodeRfc5987(filename)}`;
}

/**
 * `leadatlas-<city>-<type>-<date>.<ext>`: the parts the search has, lower-cased, spaces and separators
 * turned into `-`; letters of any script are kept (they go into `filename*`).
 */
export function exportFilename(parts: { city: string | null; type: string | null; date: Date; extension: string }): string {
  const words = [parts.city, parts.type].map((p) => (p ? slugPart(p) : '')).filter((p) => p !== '');
  return ['leadatlas', ...words, parts.date.toISOString().slice(0, 10)].join('-') + `.${parts.extension}`;
}

function slugPart(text: string): string {
  return text
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '');
}

/** Accents folded (München → Munchen), every other non-ASCII run dropped, never an empty stem. */
function asciiFallback(filename: string): string {
  const folded = filename
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/-(?=\.)|^-/g, '');
  return folded.startsWith('.') ? `export${folded}` : folded;
}

function encodeRfc5987(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
