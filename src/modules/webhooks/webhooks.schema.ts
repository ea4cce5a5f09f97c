import { Type } from '@sinclair/typebox';

/** The `webhook_url` of a job's request: where its end is told (`<kind>.succeeded` / `<kind>.failed`). */
export function WebhookUrlSchema(readmeSection: string) {
  return Type.String({
    maxLength: 2048,
    pattern: '^https?://[^\\s/?#@]+(?:[/?#][^\\s]*)?$',
    description: `Told with a signed POST when the job ends (\`LeadAtlas-Signature\`; see ${readmeSection}). Only public addresses are reached.`,
    examples: ['https://example.com/hooks/leadatlas'],
  });
}
