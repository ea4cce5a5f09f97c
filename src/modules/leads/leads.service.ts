import { decodeCursor, encodeCursor } from '../../infra/cursor.ts';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { type PlaceField, parseFields, pickFields, placeRowToPlace } from '../places/places.schema.ts';
import { accountExclusion } from './exclusion.ts';
import { countLeads, countLeadsByCategory, type LeadFilters, type LeadKey, type LeadPlaceRow, listLeads } from './leads.repository.ts';
import { type Lead, type LeadCategories, type LeadsPage, type LeadsQuery, leadsPerPage } from './leads.schema.ts';

/** The account's leads newest first: by `cursor` (keyset) or `page` (offset), never both. */
export async function listAccountLeads(db: Db, accountId: number, query: LeadsQuery): Promise<LeadsPage> {
  if (query.cursor !== undefined && query.page !== undefined) {
    throw new AppError('validation_failed', 'Pass either cursor or page, not both', {
      errors: [{ field: 'querystring.page', message: 'cannot be combined with cursor' }],
    });
  }
  const filters: LeadFilters = {
    category: query.category,
    city: query.city,
    country: query.country,
    hasPhone: query.has_phone,
    hasWebsite: query.has_website,
    minRating: query.min_rating,
    exclude: await accountExclusion(db, accountId, { onlyNew: false }),
  };
  const fields = parseFields(query.fields);
  const perPage = query.per_page ?? leadsPerPage.default;
  const after = query.cursor === undefined ? undefined : decodeLeadCursor(query.cursor);
  const offset = query.page === undefined ? undefined : (query.page - 1) * perPage;
  const [rows, total] = await Promise.all([
    listLeads(db, accountId, filters, { limit: perPage + 1, after, offset }),
    countLeads(db, accountId, filters),
  ]);
  const pageRows = rows.slice(0, perPage);
  const last = pageRows.at(-1);
  return {
    data: pageRows.map((row) => leadRowToLead(row, fields)),
    total,
    per_page: perPage,
    page: query.cursor === undefined ? (query.page ?? 1) : null,
    next_cursor: rows.length > perPage && last ? encodeLeadCursor({ lastExportedAt: last.last_exported_at, id: last.lead_id }) : null,
  };
}

export async function leadCategories(db: Db, accountId: number): Promise<LeadCategories> {
  const counts = await countLeadsByCategory(db, accountId, await accountExclusion(db, accountId, { onlyNew: false }));
  const data = counts.flatMap((c) => (c.slug === null ? [] : [{ slug: c.slug, name: c.name, count: c.count }]));
  return {
    data,
    total: counts.reduce((sum, c) => sum + c.count, 0),
    uncategorised: counts.find((c) => c.slug === null)?.count ?? 0,
  };
}

function leadRowToLead(row: LeadPlaceRow, fields: readonly PlaceField[]): Lead {
  return {
    ...pickFields(placeRowToPlace(row), fields),
    lead: { search_id: row.lead_search_id, first_exported_at: row.first_exported_at, last_exported_at: row.last_exported_at },
  };
}

/** A page cursor of the leads list: the last lead's (last_exported_at, id). */
function encodeLeadCursor(key: LeadKey): string {
  return encodeCursor([key.lastExportedAt, key.id]);
}

function decodeLeadCursor(cursor: string): LeadKey {
  return decodeCursor(
    cursor,
    (value) => {
      const [lastExportedAt, id] = Array.isArray(value) ? value : [];
      return typeof lastExportedAt === 'string' && Number.isSafeInteger(id) ? { lastExportedAt, id: id as number } : undefined;
    },
    { field: 'querystring.cursor', message: 'pass the next_cursor of the previous page unchanged' },
  );
}
