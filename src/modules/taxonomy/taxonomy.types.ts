import type { PlaceInput } from '../places/place-input.ts';

/** Chooses taxonomy categories for a place. Returns slugs, primary first; empty when nothing fits. */
export interface Classifier {
  classify(source: string, place: PlaceInput): string[];
}
