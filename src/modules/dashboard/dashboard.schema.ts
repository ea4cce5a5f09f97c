import { Type } from '@sinclair/typebox';
import { CreateJobSchema } from '../exports/export-jobs.schema.ts';
import { ExportQuerySchema } from '../exports/exports.schema.ts';
import { CreateMonitorSchema } from '../monitors/monitors.schema.ts';
import { SuppressionsUploadQuerySchema } from '../suppressions/suppressions.schema.ts';

/**
 * The dashboard's forms, query strings and path parameters. A field the API also takes is the API's own
 * schema (its format list, its webhook URL rule, its country pattern), so a form cannot accept what the API
 * refuses or the other way round. Query parameters are read leniently (a page of a bad `from` starts at 1):
 * they come from the dashboard's own links.
 */

const optionalText = Type.Optional(Type.String());

export const SignInQuerySchema = Type.Object({ next: optionalText });
export const SignInFormSchema = Type.Object({ email: optionalText, password: optionalText, next: optionalText });
export const SignUpFormSchema = Type.Object({ email: optionalText, password: optionalText });
export const PasswordFormSchema = Type.Object({ current_password: optionalText, new_password: optionalText });

export const TokensQuerySchema = Type.Object({ revoked: optionalText });
export const NewTokenQuerySchema = Type.Object({ welcome: optionalText });
export const TokenFormSchema = Type.Object({
  name: optionalText,
  scopes: Type.Optional(Type.Array(Type.String())),
  expiry: optionalText,
  confirm_no_expiry: optionalText,
});
export const RotateFormSchema = Type.Object({ grace_seconds: Type.Optional(Type.Integer({ minimum: 0 })) });
export const IdParamsSchema = Type.Object({ id: Type.String() });

export const ResultsQuerySchema = Type.Object({ cursor: optionalText, from: optionalText });
/** A download of a saved search: the API's export format and `only_new` (the button's checkbox sends `true`). */
export const ExportFormSchema = Type.Object({
  format: ExportQuerySchema.properties.format,
  only_new: ExportQuerySchema.properties.only_new,
});
/** A background export: the API's job format and webhook URL rule. */
export const ExportJobFormSchema = Type.Object({
  format: CreateJobSchema.properties.format,
  webhook_url: CreateJobSchema.properties.webhook_url,
});
export const ExportsQuerySchema = Type.Object({ rotated: optionalText });
/** A new monitor: the API's search id and webhook URL rules. */
export const MonitorFormSchema = Type.Object({
  search_id: CreateMonitorSchema.properties.search_id,
  webhook_url: CreateMonitorSchema.properties.webhook_url,
});

export const SuppressionsQuerySchema = Type.Object({
  cursor: optionalText,
  from: optionalText,
  removed: optionalText,
  removed_all: optionalText,
});
/** The upload form's options, read from the parts before the file: the API's country and on_invalid. */
export const SuppressionsUploadFormSchema = Type.Object({
  _csrf: optionalText,
  country: SuppressionsUploadQuerySchema.properties.country,
  on_invalid: SuppressionsUploadQuerySchema.properties.on_invalid,
});
export const RemoveAllFormSchema = Type.Object({ confirm: optionalText });
