/** Small, source-neutral helpers the format readers share to pick fields out of rows. */

/** A trimmed, non-empty string, or null. Numbers are written as text; objects and arrays are not strings. */
export function text(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return null;
  const t = value.trim();
  return t === '' ? null : t;
}

/** A finite number from a number or numeric text (`4.500000`, ` 918 `), or null. */
export function number(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  const t = text(value);
  if (t === null || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) return null;
  return Number(t);
}

/** JSON text parsed, or undefined when it is empty or not JSON (scraper cells are often JSON). */
export function jsonCell(value: unknown): unknown {
  const t = text(value);
  if (t === null) return undefined;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return undefined;
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A GeoJSON Feature line (`{"type":"Feature","properties":{…}}`) as a flat object with its `id` and `geometry`. */
export function unwrapFeature(o: Record<string, unknown>): Record<string, unknown> {
  if (o.type === 'Feature' && isObject(o.properties)) return { ...o.properties, id: o.id ?? o.properties.id, geometry: o.geometry };
  return o;
}

/** Splits a list written as one cell (`French, Japanese, Desserts`), keeping each item as written. */
export function splitList(value: unknown, separator: RegExp = /\s*[,;|]\s*/): string[] {
  const t = text(value);
  return t === null
    ? []
    : t
        .split(separator)
        .map((s) => s.trim())
        .filter((s) => s !== '');
}

/** The distinct non-empty strings, first occurrence first. */
export function distinct(values: Array<string | null | undefined>): string[] {
  return [...new Set(values.filter((v): v is string => typeof v === 'string' && v.trim() !== '').map((v) => v.trim()))];
}

const dayOrder = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const dayShort = ['Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa', 'Su'];

/**
 * Weekly hours given as an object keyed by English day name (`{"Monday": ["9 AM–5 PM"], "Tuesday": "8:0-18:30"}`)
 * written compactly: days in Monday-first order, two-letter day names as in OpenStreetMap, runs of days with
 * the same text merged (`Tu-Fr`), several ranges of one day joined by `, `, days joined by `; `. The times
 * stay as the source wrote them (after `formatTime`). Days the source leaves out are left out.
 * Returns null when the object has no known day.
 */
export function compactWeeklyHours(hours: Record<string, unknown>, formatTime: (t: string) => string = (t) => t): string | null {
  const perDay = dayOrder.map((day) => {
    const v = hours[day];
    const ranges = Array.isArray(v) ? v.map(text) : [text(v)];
    const kept = ranges.filter((r): r is string => r !== null).map(formatTime);
    return kept.length > 0 ? kept.join(', ') : null;
  });
  const parts: string[] = [];
  for (let i = 0; i < 7; ) {
    const value = perDay[i];
    let j = i;
    while (j + 1 < 7 && value !== null && perDay[j + 1] === value) j++;
    if (value !== null) parts.push(`${dayShort[i]}${j > i ? `-${dayShort[j]}` : ''} ${value}`);
    i = j + 1;
  }
  return parts.length > 0 ? parts.join('; ') : null;
}

/** Attributes without null, undefined or empty values, so an absent field does not change the content hash. */
export function attributes(values: Record<string, unknown>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** An ISO 3166-1 alpha-2 code when the text looks like one, else the text as a country name. */
export function country(value: unknown): { countryCode: string | null; countryName: string | null } {
  const t = text(value);
  if (t === null) return { countryCode: null, countryName: null };
  return /^[A-Za-z]{2}$/.test(t) ? { countryCode: t.toUpperCase(), countryName: null } : { countryCode: null, countryName: t };
}
