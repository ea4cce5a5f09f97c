import { CATEGORY_KEYS, loadTaxonomy } from '../taxonomy/taxonomy.build.ts';

/**
 * What the matcher needs to know of a taxonomy category: how big such a place is (how far apart two records
 * of it may lie) and which family of business it is (a hotel and the restaurant inside it are two places).
 * Both are read off the OSM tag of the category's iD preset (`restaurant_italian` → `amenity=restaurant`,
 * `bakery` → `shop=bakery`), so that every category of the taxonomy, present or future, has one.
 */
export type PlaceSize = 'small' | 'medium' | 'large';

/** Grounds, campuses and parks: their points can be anywhere on hundreds of metres. */
const LARGE: ReadonlySet<string> = new Set([
  'leisure=park',
  'leisure=nature_reserve',
  'leisure=golf_course',
  'leisure=stadium',
  'leisure=marina',
  'leisure=water_park',
  'leisure=resort',
  'leisure=track',
  'tourism=theme_park',
  'tourism=zoo',
  'tourism=camp_site',
  'tourism=caravan_site',
  'amenity=hospital',
  'amenity=university',
  'amenity=college',
  'amenity=prison',
  'amenity=grave_yard',
  'education=university',
  'education=college',
  'healthcare=hospital',
]);

/** Buildings larger than a shop front: hotels, schools, museums, halls, shopping centres. */
const MEDIUM: ReadonlySet<string> = new Set([
  'tourism=hotel',
  'tourism=hostel',
  'tourism=motel',
  'tourism=museum',
  'tourism=attraction',
  'tourism=gallery',
  'tourism=apartment',
  'amenity=school',
  'amenity=theatre',
  'amenity=cinema',
  'amenity=library',
  'amenity=place_of_worship',
  'amenity=townhall',
  'amenity=courthouse',
  'amenity=conference_centre',
  'amenity=exhibition_centre',
  'amenity=casino',
  'amenity=clinic',
  'amenity=community_centre',
  'amenity=arts_centre',
  'amenity=marketplace',
  'amenity=bus_station',
  'amenity=kindergarten',
  'amenity=events_venue',
  'amenity=fire_station',
  'amenity=police',
  'education=school',
  'education=kindergarten',
  'leisure=sports_centre',
  'leisure=swimming_pool',
  'leisure=garden',
  'leisure=pitch',
  'leisure=ice_rink',
  'shop=mall',
  'shop=department_store',
  'shop=supermarket',
  'shop=garden_centre',
  'shop=wholesale',
  'office=government',
]);

/** Eating and drinking, and the food trades that often serve on the premises (Michelin lists bakeries and delis). */
const FOOD: ReadonlySet<string> = new Set([
  'amenity=restaurant',
  'amenity=fast_food',
  'amenity=cafe',
  'amenity=bar',
  'amenity=pub',
  'amenity=biergarten',
  'amenity=ice_cream',
  'amenity=food_court',
  'amenity=nightclub',
  'amenity=events_venue',
  'amenity=canteen',
  'shop=bakery',
  'shop=deli',
  'shop=pastry',
  'shop=confectionery',
  'shop=pasta',
  'shop=butcher',
  'shop=cheese',
  'shop=chocolate',
  'shop=coffee',
  'shop=tea',
  'shop=wine',
  'shop=alcohol',
  'shop=beverages',
  'shop=seafood',
  'shop=greengrocer',
  'shop=spices',
  'shop=frozen_food',
  'shop=farm',
  'craft=brewery',
  'craft=winery',
  'craft=distillery',
]);

const LODGING: ReadonlySet<string> = new Set([
  'tourism=hotel',
  'tourism=motel',
  'tourism=hostel',
  'tourism=guest_house',
  'tourism=apartment',
  'tourism=chalet',
  'tourism=alpine_hut',
  'tourism=camp_site',
  'tourism=caravan_site',
  'tourism=wilderness_hut',
  'leisure=resort',
]);

const HEALTH_AMENITIES: ReadonlySet<string> = new Set(['hospital', 'clinic', 'doctors', 'dentist', 'pharmacy', 'veterinary']);
const EDUCATION_AMENITIES: ReadonlySet<string> = new Set([
  'school',
  'college',
  'university',
  'kindergarten',
  'language_school',
  'music_school',
  'driving_school',
]);

export interface CategoryFacts {
  /** `key=value` of the category's preset (`amenity=restaurant`; `shop=*` for the generic shop). */
  tag: string;
  size: PlaceSize;
  /** `food`, `lodging`, `health`, `education`, else the preset's key (`shop`, `office`, `leisure`, `amenity`…). */
  family: string;
}

function factsOf(key: string, value: string): CategoryFacts {
  const tag = `${key}=${value}`;
  const size: PlaceSize = LARGE.has(tag) ? 'large' : MEDIUM.has(tag) ? 'medium' : 'small';
  const family = FOOD.has(tag)
    ? 'food'
    : LODGING.has(tag)
      ? 'lodging'
      : key === 'healthcare' || (key === 'amenity' && HEALTH_AMENITIES.has(value))
        ? 'health'
        : key === 'education' || (key === 'amenity' && EDUCATION_AMENITIES.has(value))
          ? 'education'
          : key;
  return { tag, size, family };
}

let bySlug: Map<string, CategoryFacts> | undefined;

/** Facts of a taxonomy slug; undefined for a slug the taxonomy does not have. The table is built once (tens of milliseconds). */
export function categoryFacts(slug: string): CategoryFacts | undefined {
  if (!bySlug) {
    bySlug = new Map();
    for (const c of loadTaxonomy().categories) {
      const key = CATEGORY_KEYS.find((k) => k in c.osmTags);
      if (key) bySlug.set(c.slug, factsOf(key, c.osmTags[key]!));
    }
  }
  return bySlug.get(slug);
}

/** The facts of every category of a record that the taxonomy knows. */
export function recordCategoryFacts(categories: readonly string[], category: string | null): CategoryFacts[] {
  const slugs = categories.length > 0 ? categories : category !== null ? [category] : [];
  const out: CategoryFacts[] = [];
  for (const s of slugs) {
    const f = categoryFacts(s);
    if (f && !out.some((o) => o.tag === f.tag)) out.push(f);
  }
  return out;
}

/** The largest size among a record's categories (a place that is a hotel and a restaurant is a hotel-sized place). */
export function sizeOf(facts: readonly CategoryFacts[]): PlaceSize {
  if (facts.some((f) => f.size === 'large')) return 'large';
  return facts.some((f) => f.size === 'medium') ? 'medium' : 'small';
}
