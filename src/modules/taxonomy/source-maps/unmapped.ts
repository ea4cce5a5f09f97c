/**
 * Why a category of a source's table is deliberately left without a project category (its value is null
 * there): each null entry is listed in the table's `*_UNMAPPED` with one of these reasons, and a test keeps
 * the two in step. None of them is a business a lead list is made of, which is why the coverage of the
 * Foursquare sample stays below 97 % (bench/RESULTS.md).
 */
export const UNMAPPED_REASONS = {
  landform: 'a landform, body of water or natural area (lake, mountain, beach, trail, fishing area)',
  structure: 'a road, bridge, dam, tower or other structure of infrastructure, not a business in it',
  transit: 'a public transport stop, station, line or hub, a toll or border post (its operator is a business, the stop is not)',
  vehicle: 'a vehicle (plane, train, boat, a moving target)',
  event: 'an event (festival, parade, game), not a premises',
  settlement: 'a settlement or administrative area (city, neighbourhood, county, country)',
  public: 'a public site no one trades with (cemetery, military site, utility network, public facility)',
  residential: 'a private home, or a residential, mobile-home or industrial estate as a whole',
  memorial: 'a memorial, landmark or pilgrimage site (a place of worship or a museum there has its own category)',
  group: 'a group so broad that any one category would mislead (the record usually carries a narrower one)',
} as const;

export type UnmappedReason = keyof typeof UNMAPPED_REASONS;
