import { createRequire } from 'node:module';
import type { Db } from '../../infra/db/database.ts';
import type { ReadPool } from '../../infra/db/read-pool.ts';
import { AppError } from '../../infra/errors.ts';
import type { CategoryIndex } from '../taxonomy/taxonomy.ts';
import type { ReferenceReadTasks } from './reference.reads.ts';
import { listCountryRows } from './reference.repository.ts';

const require = createRequire(import.meta.url);
const isoCountries = require('i18n-iso-countries') as {
  getName(code: string, lang: string): string | undefined;
  alpha2ToAlpha3(code: string): string | undefined;
};

export interface ReferenceDeps {
  db: Db;
  reads: ReadPool<ReferenceReadTasks>;
  categories: () => CategoryIndex;
}

export class ReferenceService {
  constructor(private readonly deps: ReferenceDeps) {}

  private async counts(task: 'placeCountsByCategory' | 'placeCountsByCountry'): Promise<Map<string, number>> {
    return new Map(await this.deps.reads.run(task));
  }

  async listCategories(lang: string | null, parent: string | undefined) {
    const index = this.deps.categories();
    if (parent !== undefined && !index.get(parent)) {
      throw new AppError('unknown_value', `parent "${parent}" is not a category slug`, {
        errors: [{ field: 'querystring.parent', message: 'is not a category slug', allowed: { see: '/api/v2/categories' } }],
      });
    }
    const counts = await this.counts('placeCountsByCategory');
    const withChildren = (slug: string) => index.subtree(slug).reduce((n, s) => n + (counts.get(s) ?? 0), 0);
    const data = index
      .list(lang ?? undefined)
      .filter((c) => parent === undefined || c.parent === parent)
      .map((c) => ({
        slug: c.slug,
        name: c.name,
        parent: c.parent,
        place_count: counts.get(c.slug) ?? 0,
        place_count_with_children: withChildren(c.slug),
      }));
    return { lang: lang ?? 'en', total: data.length, data };
  }

  async listCountries(lang: string | null) {
    const primary = lang ? lang.split('-')[0]!.toLowerCase() : 'en';
    const [rows, counts] = await Promise.all([listCountryRows(this.deps.db), this.counts('placeCountsByCountry')]);
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
