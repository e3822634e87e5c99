import { z } from 'zod';
import { count, instant, stringList, timestamps } from './view-fields.js';

/** A webhook as the management API shows it: never a signing secret. */
export const webhookViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  events: stringList,
  enabled: z.boolean(),
  disabledReason: z
    .string()
    .nullable()
    .describe(
      '`failing`: the controller disabled it after 24 hours of failed deliveries. Null while enabled, ' +
        'and when an admin disabled it. Cleared by `PATCH {"enabled": true}`.',
    ),
  failingSince: instant
    .nullable()
    .describe('The first failed attempt of the current run of failures; null after a success.'),
  previousSecretExpiresAt: instant
    .nullable()
    .describe(
      'After a secret rotation: until then deliveries are signed with the previous secret too. Null ' +
        'when no previous secret is valid.',
    ),
  ...timestamps,
});

/** 201 of a create: the id, its link, and the signing secret, shown this once. */
export const webhookCreatedSchema = z.object({
  id: z.string(),
  _links: z.object({ self: z.object({ href: z.string() }) }),
  secret: z
    .string()
    .describe('`whsec_` and the base64 of 32 random bytes (Standard Webhooks). Never shown again.'),
});

/** The new signing secret of a rotation, shown this once, and the end of the previous one. */
export const webhookSecretRotatedSchema = z.object({
  secret: z.string().describe('The new secret: `whsec_` and the base64 of 32 random bytes.'),
  previousSecretExpiresAt: instant.describe(
    'Until then deliveries are signed with the previous secret too (24 hours).',
  ),
});

/** One attempt of a delivery. */
export const webhookDeliveryAttemptSchema = z.object({
  attemptedAt: instant,
  statusCode: z.number().int().nullable().describe("The receiver's HTTP status; null when none came."),
  error: z.string().nullable().describe('Why no response came, or why the response failed.'),
  durationMs: count,
});

/** One delivery of an event to a webhook, with its latest attempts. */
export const webhookDeliverySchema = z.object({
  id: z.string().describe('Sent as the `webhook-id` header; the same on every attempt.'),
  event: z.string(),
  sequence: z.number().int().describe('The order of the event among all events of the deployment.'),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: count,
  createdAt: instant,
  nextAttemptAt: instant.nullable(),
  lastAttemptAt: instant.nullable(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  succeededAt: instant.nullable(),
  history: z
    .array(webhookDeliveryAttemptSchema)
    .describe('The attempts, oldest first: the latest 50 when there were more.'),
});

/** `meta` of a page of deliveries: no offset or total, the cursor of the next page instead. */
export const webhookDeliveryListMetaSchema = z.object({
  pagination: z.object({
    limit: count,
    nextCursor: z
      .string()
      .nullable()
      .describe('Pass as `cursor` for the next (older) page; null on the last page.'),
  }),
});

export type WebhookView = z.infer<typeof webhookViewSchema>;
export type WebhookCreatedView = z.infer<typeof webhookCreatedSchema>;
export type WebhookSecretRotatedView = z.infer<typeof webhookSecretRotatedSchema>;
export type WebhookDeliveryView = z.infer<typeof webhookDeliverySchema>;
export type WebhookDeliveryAttemptView = z.infer<typeof webhookDeliveryAttemptSchema>;
