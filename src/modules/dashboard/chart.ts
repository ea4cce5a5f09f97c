import { html, type SafeHtml } from './html.ts';

export interface DayCount {
  /** UTC day, `2026-11-21`. */
  day: string;
  count: number;
}

/**
 * Requests per day as an inline SVG bar chart. The SVG is decorative for screen readers
 * (`aria-hidden`): the same numbers follow in a real table, which is the accessible form.
 */
export function usageChart(days: DayCount[], width = 720, height = 220): SafeHtml {
  const max = Math.max(1, ...days.map((d) => d.count));
  const top = niceCeiling(max);
  const left = 44;
  const bottom = 28;
  const plotH = height - bottom - 10;
  const slot = (width - left - 8) / Math.max(1, days.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number) => 10 + plotH - (v / top) * plotH;
  // Counts are whole numbers: a half-way line only when it falls on one.
  const ticks = top % 2 === 0 ? [0, top / 2, top] : [0, top];
  const bars = days.map((d, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const h = Math.max(d.count > 0 ? 1 : 0, (d.count / top) * plotH);
    const labelEvery = Math.ceil(days.length / 8);
    // Counted from the last day, so today is always labelled and labels never collide.
    const showLabel = (days.length - 1 - i) % labelEvery === 0;
    return html`<rect class="chart-bar" x="${x.toFixed(1)}" y="${(10 + plotH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"><title>${d.day}: ${d.count}</title></rect>${
      showLabel
        ? html`<text class="chart-axis" x="${(x + barW / 2).toFixed(1)}" y="${height - 8}" text-anchor="middle">${d.day.slice(5)}</text>`
        : ''
    }`;
  });
  const grid = ticks.map(
    (t) =>
      html`<line class="chart-grid" x1="${left}" x2="${width - 8}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"/><text class="chart-axis" x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${formatCount(t)}</text>`,
  );
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" aria-hidden="true" focusable="false" xmlns="http://www.w3.org/2000/svg">${grid}${bars}</svg>`;
}

export interface LabelledCount {
  label: string;
  count: number;
}

/**
 * Counts by label as an inline SVG of horizontal bars, in the order given, each with its label on the left
 * and its exact number at its end. Decorative for screen readers like `usageChart`: the page puts the same
 * numbers in a table. Labels past `labelChars` are cut with an ellipsis (the full one is the bar's title).
 */
export function barChart(bars: LabelledCount[], width = 720, labelChars = 26): SafeHtml {
  const row = 24;
  const left = 190;
  const right = 70;
  const height = Math.max(1, bars.length) * row + 4;
  const top = niceCeiling(Math.max(1, ...bars.map((b) => b.count)));
  const plotW = width - left - right;
  const rows = bars.map((b, i) => {
    const y = 2 + i * row;
    const w = Math.max(b.count > 0 ? 1 : 0, (b.count / top) * plotW);
    const label = b.label.length > labelChars ? `${b.label.slice(0, labelChars - 1)}…` : b.label;
    return html`<text class="chart-axis" x="${left - 8}" y="${y + row / 2 + 4}" text-anchor="end">${label}</text><rect class="chart-bar" x="${left}" y="${y + 3}" width="${w.toFixed(1)}" height="${row - 6}"><title>${b.label}: ${formatCount(b.count)}</title></rect><text class="chart-axis" x="${(left + w + 6).toFixed(1)}" y="${y + row / 2 + 4}">${formatCount(b.count)}</text>`;
  });
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" aria-hidden="true" focusable="false" xmlns="http://www.w3.org/2000/svg"><line class="chart-grid" x1="${left}" x2="${left}" y1="0" y2="${height}"/>${rows}</svg>`;
}

/** The smallest 1, 2 or 5 × 10ⁿ at or above `value`, so the axis reads in round numbers. */
export function niceCeiling(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((f) => f * magnitude).find((m) => m >= value) ?? value;
}

function formatCount(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString('en') : n.toFixed(1);
}
