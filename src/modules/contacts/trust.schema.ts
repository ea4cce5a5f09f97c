import { type TSchema, Type } from '@sinclair/typebox';
import { emailStatuses, phoneTypes, websiteStatuses } from './trust.types.ts';

/** The public form of each value's evidence (docs/trust.md), spread into the items of `contacts`. */

const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const literals = (values: readonly string[], description: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...values], description });

const seen = {
  confidence: Type.Number({
    minimum: 0,
    maximum: 1,
    description: 'Probability that the value is right and reaches the business, from a calibrated model of its evidence (docs/trust.md)',
    examples: [0.87],
  }),
  sources: Type.Array(Type.String(), {
    description: 'Every source that carries the value (`osm`, `overture`, `foursquare`…, `website`)',
    examples: [['osm', 'website']],
  }),
  source_count: Type.Integer({ description: 'How many sources agree on it' }),
  first_seen_at: nullable(Type.String({ format: 'date-time', description: 'When a source was first seen giving it' })),
  last_seen_at: nullable(Type.String({ format: 'date-time', description: 'When a source was last seen giving it' })),
};

export const emailEvidence = {
  status: literals(
    emailStatuses,
    '`valid_domain`: its domain has mail servers (MX, else an address: the implicit MX); `no_mx`: it cannot receive mail; `invalid`: no address; `unknown`: not checked, or DNS did not answer',
  ),
  checked_at: nullable(Type.String({ format: 'date-time', description: "When its domain's DNS was last checked" })),
  role: Type.Boolean({ description: 'A role address (`info@`, `sales@`, `kontakt@`…) rather than a person’s' }),
  disposable: Type.Boolean({ description: 'Its domain is a disposable-mail service’s' }),
  free_provider: Type.Boolean({ description: 'Its domain is a free mail provider’s (`gmail.com`…)' }),
  own_domain: Type.Boolean({ description: "Its domain is the place's website's" }),
  ...seen,
};

export const phoneEvidence = {
  international: nullable(Type.String({ description: 'International form, spaced as libphonenumber does', examples: ['+49 89 2199890'] })),
  national: nullable(Type.String({ description: 'National form', examples: ['089 2199890'] })),
  as_written: nullable(Type.String({ description: 'As its first source wrote it, when known', examples: ['+49 (0) 89 21 99 89 0'] })),
  type: literals(
    phoneTypes,
    "By libphonenumber in the place's country; `unknown` when it cannot tell (United States numbers, invalid ones)",
  ),
  valid: Type.Boolean({ description: 'A valid number by libphonenumber' }),
  ...seen,
};

export const WebsiteItemSchema = Type.Object({
  url: Type.String({ examples: ['https://www.ratskeller.com/'] }),
  source: Type.String({ description: 'The first source that gave it', examples: ['osm'] }),
  status: literals(
    websiteStatuses,
    '`live`: its home page answered; `redirected`: to another domain (`final_domain`); `parked`: a parking or for-sale page; `dead`: DNS or connection failed; `unknown`: never fetched',
  ),
  final_domain: nullable(Type.String({ description: '`redirected`: the domain its home page ended on' })),
  checked_at: nullable(Type.String({ format: 'date-time', description: 'When it was last fetched' })),
  ...seen,
});
