import { open, rename, rm } from 'node:fs/promises';
import type { Db } from '../../infra/db/database.ts';
import { AppError } from '../../infra/errors.ts';
import { openHandedLeads } from '../exports/handed-leads.ts';
import type { PlaceNameResolver } from '../search/search.types.ts';
import { createPlaceNameResolver } from '../search/type-resolver.ts';
import { matchDepsOf } from './match.service.ts';
import { type ColumnMapping, HeaderDictionary } from './match-headers.ts';
import { type Counts, emptyCounts, writeMatchedList } from './match-jobs.runner.ts';
import { countListRows, listFormatOf, openList } from './match-lists.ts';

/** What `matchFile` did. */
export interface MatchFileSummary extends Counts {
  rows: number;
  mapping: ColumnMapping;
  headers: string[];
}

/**
 * `leadatlas match FILE --out FILE`: the match job's work on the operator's own files, in process, without
 * a job or a quota. Reads the list twice (its rows counted first, for the progress), writes `<out>.tmp` and
 * renames it to `out` once whole. With `leadsAccountId`, every matched place becomes a lead of that account.
 */
export async function matchFile(
  db: Db,
  o: {
    input: string;
    output: string;
    mapping?: ColumnMapping;
    threshold?: number;
    leadsAccountId?: number;
    onStart?: (rows: number, mapping: ColumnMapping) => void;
    onProgress?: (counts: Counts) => void;
  },
): Promise<MatchFileSummary> {
  const handle = await open(o.input, 'r');
  const head = Buffer.alloc(512);
  try {
    await handle.read(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
  const format = listFormatOf(o.input, head);
  if (!format) throw new AppError('validation_failed', `${o.input} is empty`, { errors: [{ field: 'FILE', message: 'is empty' }] });
  const counted = await openList(o.input, format);
  const headers = counted.headers;
  const given = o.mapping ?? {};
  for (const [field, header] of Object.entries(given)) {
    if (!headers.includes(header!)) {
      throw new AppError('validation_failed', `--mapping ${field}: the list has no column ${JSON.stringify(header)}`, {
        errors: [{ field: `--mapping.${field}`, message: 'is not a header of the list', allowed: headers }],
      });
    }
  }
  const mapping = HeaderDictionary.build().guess(headers, given);
  if (!mapping.name) {
    throw new AppError('validation_failed', `no column of ${o.input} is recognised as the name; name it with --mapping '{"name": "…"}'`, {
      errors: [{ field: '--mapping.name', message: 'is needed: no header was recognised as the name', allowed: headers }],
    });
  }
  const rows = await countListRows(counted);
  o.onStart?.(rows, mapping);
  let resolver: PlaceNameResolver | undefined;
  const deps = matchDepsOf({ db, places: () => (resolver ??= createPlaceNameResolver(db)) });
  const leads =
    o.leadsAccountId === undefined
      ? undefined
      : await openHandedLeads(db, { accountId: o.leadsAccountId, sourceId: 'cli', source: 'match' });
  const tmp = `${o.output}.tmp`;
  const out = await open(tmp, 'w');
  const counts = emptyCounts();
  let complete = false;
  try {
    await writeMatchedList({
      deps,
      list: await openList(o.input, format),
      headers,
      mapping,
      threshold: o.threshold ?? null,
      out,
      leads,
      counts,
      onBatch: () => o.onProgress?.(counts),
    });
    await out.sync();
    complete = true;
  } finally {
    await out.close();
    await leads?.finish(complete ? 'done' : 'aborted');
    if (!complete) await rm(tmp, { force: true });
  }
  await rename(tmp, o.output);
  return { ...counts, rows, mapping, headers };
}
