import { createRequire } from 'node:module';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { AppError } from '../../infra/errors.ts';
import type { ApiReadTasks } from '../search/read-tasks.ts';
import type { CategoryIndex } from '../taxonomy/taxonomy.ts';
import { listCountryRows } from './reference.repository.ts';

const require = createRequire(import.meta.url);
const isoCountries = require('i18n-iso-countries') as {
  getName(code: string, lang: string): string | undefined;
  alpha2ToAlpha3(code: string): string | undefined;
};

/**
 * Place counts change only with imports, and counting a million rows per request would be the most
 * expensive thing these lists do: counts are computed off the event loop and kept for `countsTtlMs`.
 */
export const countsTtlMs = 60_000;

export interface ReferenceDeps {
  db: Db;
  reads: ReadPool<ApiReadTasks>;
  categories: () => CategoryIndex;
  now?: () => number;
}

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

export class ReferenceService {
  private categoryCounts: Cached<Map<string, number>> | undefined;
  private countryCounts: Cached<Map<string, number>> | undefined;

  constructor(private readonly deps: ReferenceDeps) {}

  private cached(slot: 'categoryCounts' | 'countryCounts', task: 'countPlacesByCategory' | 'countPlacesByCountry'): Promise<Map<string, number>> {
    const now = (this.deps.now ?? Date.now)();
    const hit = this[slot];
    if (hit && now - hit.at < countsTtlMs) return hit.value;
    const value = this.deps.reads.run(task).then((pairs) => new Map(pairs));
    value.catch(() => {
      if (this[slot]?.value === value) this[slot] = undefined;
    });
    this[slot] = { at: now, value };
    return value;
  }

  async listCategories(lang: string | null, parent: string | undefined) {
    const index = this.deps.categories();
    if (parent !== undefined && !index.get(parent)) {
      throw new AppError('unknown_value', `parent "${parent}" is not a category slug`, {
        errors: [{ field: 'querystring.parent', message: 'is not a category slug', allowed: { see: '/api/v2/categories' } }],
      });
    }
    const counts = await this.cached('categoryCounts', 'countPlacesByCategory');
    const withChildren = (slug: string) => index.subtree(slug).reduce((n, s) => n + (counts.get(s) ?? 0), 0);
    const data = index
      .list(lang ?? undefined)
      .filter((c) => parent === undefined || c.parent === parent)
      .map((c) => ({ slug: c.slug, name: c.name, parent: c.parent, place_count: counts.get(c.slug) ?? 0, place_count_with_children: withChildren(c.slug) }));
    return { lang: lang ?? 'en', total: data.length, data };
  }

  async listCountries(lang: string | null) {
    const primary = lang ? lang.split('-')[0]!.toLowerCase() : 'en';
    const [rows, counts] = await Promise.all([listCountryRows(this.deps.db), this.cached('countryCounts', 'countPlacesByCountry')]);
    const localised = rows.some((r) => isoCountries.getName(r.code, primary) !== undefined);
    const data = rows.map((r) => ({
      code: r.code,
      alpha3: isoCountries.alpha2ToAlpha3(r.code) ?? null,
      name: (localised ? isoCountries.getName(r.code, primary) : undefined) ?? r.name,
      native_name: r.native_name,
      continent: r.continent,
      place_count: counts.get(r.code) ?? 0,
    }));
    return { lang: localised ? primary : 'en', total: data.length, data };
  }
}
