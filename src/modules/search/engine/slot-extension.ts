import type { PlaceFacts } from './engine.repository.ts';

/**
 * Per-slot facts held beside the bitmaps (`geo-index.ts`, `name-order.ts`): told each slot's facts as the index
 * fills it (build and changes), and the end of the build (`seal`: slots below `sorted` are the build's).
 */
export interface SlotExtension {
  fill(slot: number, facts: PlaceFacts): void;
  seal(sorted: number): void;
  /** Slots filled after `seal` that the extension's order does not place (the owner rebuilds when they grow). */
  readonly looseSize: number;
}

/** The extensions of an index being built (`BitmapIndex.build`), which may ask it a slot's place id. */
export type SlotExtensionsOf = (index: { placeIdOf(slot: number): number }) => readonly SlotExtension[];
