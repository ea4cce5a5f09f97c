import { type Static, Type } from '@sinclair/typebox';
import { PlaceSchema } from '../places/places.schema.ts';
import { WebhookUrlSchema } from '../webhooks/webhooks.schema.ts';

export const monitorEventKinds = ['added', 'closed', 'changed'] as const;
export type MonitorEventKind = (typeof monitorEventKinds)[number];

export const monitorsPerPage = { default: 20, minimum: 1, maximum: 100 } as const;
export const eventsPerPage = { default: 100, minimum: 1, maximum: 1000 } as const;

export const MonitorIdParamsSchema = Type.Object(
  {
    id: Type.String({ pattern: '^mon_[A-Za-z0-9_-]{14}$', description: 'A monitor of this account', examples: ['mon_Zk3Qw9pL2mXa7Q'] }),
  },
  { additionalProperties: false },
);

export const CreateMonitorSchema = Type.Object(
  {
    search_id: Type.String({
      pattern: '^srch_[a-z2-7]{16}$',
      description: 'A saved search of this account (`search_id` of a search response): its criteria are watched',
      examples: ['srch_3f7kq2m5x9ab4cde'],
    }),
    events: Type.Optional(
      Type.Array(Type.Union(monitorEventKinds.map((k) => Type.Literal(k))), {
        minItems: 1,
        uniqueItems: true,
        description:
          'The kinds of event to record (default all): `added` (a place enters the search), `closed` (a place leaves it: closed, retired, or no longer matching), `changed` (a watched field of a place in it changed)',
      }),
    ),
    webhook_url: Type.Optional(WebhookUrlSchema('the monitors README')),
  },
  { additionalProperties: false },
);
export type CreateMonitor = Static<typeof CreateMonitorSchema>;

export const UpdateMonitorSchema = Type.Object(
  {
    paused: Type.Boolean({ description: 'true: events are not recorded (the monitor keeps following its search); false: recorded again' }),
  },
  { additionalProperties: false },
);

export const MonitorSchema = Type.Object({
  id: Type.String({ examples: ['mon_Zk3Qw9pL2mXa7Q'] }),
  search_id: Type.String(),
  events: Type.Array(Type.Union(monitorEventKinds.map((k) => Type.Literal(k)))),
  webhook_url: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
  places: Type.Integer({ description: 'Places the search holds now, as of the last evaluation' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type MonitorView = Static<typeof MonitorSchema>;

export const MonitorsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({ ...monitorsPerPage, description: `Monitors per page (${monitorsPerPage.minimum}–${monitorsPerPage.maximum})` }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: '`next_cursor` of the previous page' })),
  },
  { additionalProperties: false },
);

export const MonitorsPageSchema = Type.Object({
  data: Type.Array(MonitorSchema),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

export const EventsQuerySchema = Type.Object(
  {
    per_page: Type.Optional(
      Type.Integer({ ...eventsPerPage, description: `Events per page (${eventsPerPage.minimum}–${eventsPerPage.maximum})` }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: '`next_cursor` of the previous page: the events after it' })),
  },
  { additionalProperties: false },
);

export const MonitorEventSchema = Type.Object({
  id: Type.Integer({ description: 'Increasing within the monitor: the order events were found in' }),
  kind: Type.Union(monitorEventKinds.map((k) => Type.Literal(k))),
  changed_fields: Type.Array(Type.String(), { description: '`changed`: the watched fields that differ' }),
  at: Type.String({ format: 'date-time' }),
  place: PlaceSchema,
});

export const EventsPageSchema = Type.Object({
  data: Type.Array(MonitorEventSchema),
  next_cursor: Type.String({ description: 'Where the next read continues; the same cursor again gives the events found since' }),
});
