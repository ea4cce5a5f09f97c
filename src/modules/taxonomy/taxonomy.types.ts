import type { PlaceInput } from '../places/place-input.ts';

/** Chooses taxonomy categories for a place. Returns slugs, primary first; empty when nothing fits. */
export interface Classifier {
  /** `publisher`: whose category vocabulary the place's terms are in (`SourceReader.publisher`), not the label it is stored under. */
  classify(publisher: string, place: PlaceInput): string[];
}
