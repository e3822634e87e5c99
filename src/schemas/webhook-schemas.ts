import { z } from 'zod';
import { booleanField, nonEmpty } from './schema-fields.js';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';
import { strictBody } from './strict-body.js';

/** The most event names and prefixes one webhook may subscribe to. */
export const MAX_WEBHOOK_EVENTS = 50;

/**
 * An event name (`identity.created`, `oidc.device.user-code-wrong`: lowercase dotted words of
 * letters, digits and hyphens), a prefix of such names ending in `.*` (`identity.*`), or `*` for
 * every event. Names are not checked against the catalog: a webhook may subscribe to an event
 * that a later release adds.
 */
const EVENT_NAME = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/;
const EVENT_PREFIX = /^([a-z][a-z0-9-]*\.)+\*$/;

export const isEventPattern = (s: string) => s === '*' || EVENT_NAME.test(s) || EVENT_PREFIX.test(s);

const eventPattern = z
  .string()
  .max(200)
  .refine(
    isEventPattern,
    'must be an event name such as identity.created, a prefix such as identity.*, or *',
  );

const events = z
  .array(eventPattern)
  .min(1, 'must name at least one event')
  .max(MAX_WEBHOOK_EVENTS, `must name at most ${MAX_WEBHOOK_EVENTS} events`)
  .transform((list) => [...new Set(list)]);

/** Checked again by the service, against `webhooks.allowPrivateTargets` (webhook-target.ts). */
const url = nonEmpty(2048);

export const webhookCreateSchema = strictBody({
  name: nonEmpty(255),
  url,
  events,
  enabled: booleanField.optional(),
});

export const webhookPatchSchema = strictBody({
  name: nonEmpty(255).optional(),
  url: url.optional(),
  events: events.optional(),
  enabled: booleanField.optional(),
});

export type WebhookCreate = z.output<typeof webhookCreateSchema>;
export type WebhookPatch = z.output<typeof webhookPatchSchema>;

/** API field → column, for list filters and sorting. */
export const webhookListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  url: { column: 'url', type: 'string' },
  enabled: { column: 'enabled', type: 'boolean' },
  disabledReason: { column: 'disabled_reason', type: 'string' },
  failingSince: { column: 'failing_since', type: 'datetime' },
  createdAt: { column: 'created_at', type: 'datetime' },
  updatedAt: { column: 'updated_at', type: 'datetime' },
} satisfies ListFields;

export const parseWebhookList = listQueryParser(webhookListFields, 'name');
