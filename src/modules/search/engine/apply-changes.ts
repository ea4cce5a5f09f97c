import type { Db } from '../../../infra/db/database.ts';
import { placeChangesSince } from '../../places/place-changes.repository.ts';
import type { BitmapIndex } from './bitmap-index.ts';
import type { ContactIndex } from './contact-index.ts';
import { type PlaceFacts, placeFactsByIds } from './engine.repository.ts';

/** Ids per statement while applying changes. */
const APPLY_BATCH = 5_000;
/** Change-log rows read per round. */
const CHANGES_PER_READ = 200_000;

/**
 * Applies the change log since the index's version (to the contact postings too); false when the log no longer
 * reaches back to it. `changed` hears each round's place ids before their facts are read.
 */
export async function applyChanges(
  db: Db,
  index: BitmapIndex,
  changed?: (placeIds: readonly number[]) => void,
  contacts?: ContactIndex,
): Promise<boolean> {
  for (;;) {
    const changes = await placeChangesSince(db, index.version, CHANGES_PER_READ);
    if (!changes.complete) return false;
    changed?.(changes.placeIds);
    const facts: PlaceFacts[] = [];
    for (let i = 0; i < changes.placeIds.length; i += APPLY_BATCH)
      facts.push(...(await placeFactsByIds(db, changes.placeIds.slice(i, i + APPLY_BATCH))));
    index.apply(changes.placeIds, facts, changes.through);
    contacts?.apply(changes.placeIds, facts);
    if (!changes.more) return true;
  }
}
