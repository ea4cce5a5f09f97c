/**
 * Every threshold of the conflation matcher, in one place. What each rule means and why the numbers are
 * what they are: README.md beside this file. Distances are great-circle metres between the records' points.
 */
export const matchRules = {
  /**
   * How far apart two records of one place may lie, by the size of the kind of place (`kinds.ts` derives
   * the kind from the taxonomy category). Two points of one café are a doorway and a geocoded address
   * apart; a park's or a campus's are anywhere on its grounds.
   */
  radiusM: { small: 150, medium: 400, large: 1500 },
  /** Same E.164 phone, and names that are the same or one part of the other: within this distance. */
  phoneMaxDistanceM: 500,
  /** Same registrable website domain (not a brand's, see `sharedKeyMaxPlaces`) and related names: within this distance. */
  domainMaxDistanceM: 250,
  /**
   * When street and house number agree, the points may lie this many times the kind's radius apart (a
   * restaurant in a shopping centre is placed at the centre by one source and at its door by the other).
   */
  addressAgreeRadiusFactor: 3,
  /**
   * Phone, name and street address all agree: the records are one business even when one source's point is
   * wrong by kilometres. Further than this, they are not compared (and blocking would not bring them together).
   */
  allAgreeMaxDistanceM: 5000,
  /** Name similarity (0–1, `names.ts`) at or above which two names are the same name. */
  sameNameMin: 0.85,
  /**
   * A phone or a domain that this many places or more carry is a brand's or a switchboard's (a chain's
   * website, a hotel group's reservations line): it says nothing about which branch a record is. Only known
   * when the caller passes counts (`MatchContext`).
   */
  sharedKeyMaxPlaces: 4,
  /** Shortest name, in letters and digits, that counts as contained in another (`Bao`, `Cut`). */
  containedMinLetters: 3,
  /** Weights of the score (ranking among candidates; the decision comes from the rules). Sum 1. */
  scoreWeights: { name: 0.5, phone: 0.15, domain: 0.1, address: 0.1, proximity: 0.15 },
  /** Side of the blocking grid's cells: at least the largest radius, so that the 3×3 cells around a point cover it. */
  blockingCellM: 1500,
} as const;

export type MatchRules = typeof matchRules;
