import type { Knex } from 'knex';
import type { SecretBox } from '../../crypto/secret-box.js';
import { newId } from '../../crypto/random.js';
import type { ListPage, ListQuery } from '../../db/list-query.js';
import { inTransaction, RETRY_DEADLOCKS } from '../../db/transaction.js';
import { AppError, validationError } from '../../errors/app-error.js';
import { webhookDeliveryListRepository } from '../../repositories/webhook-delivery-list-repository.js';
import { webhooksRepository, type WebhookChanges } from '../../repositories/webhooks-repository.js';
import { checkName } from '../../schemas/name-rules.js';
import type { WebhookCreate, WebhookPatch } from '../../schemas/webhook-schemas.js';
import type { WebhookSecretRotatedView, WebhookView } from '../../schemas/webhook-views.js';
import { NO_AUDIT, type AuditTrail } from '../audit-trail.js';
import { newWebhookSecret } from './webhook-secret.js';
import { webhookUrlProblem } from './webhook-target.js';
import { webhookView } from './webhook-view.js';

export interface WebhookServiceDeps {
  knex: Knex;
  /** Seals the signing secrets with the master key. */
  box: SecretBox;
  /** webhooks.allowPrivateTargets */
  allowPrivateTargets: boolean;
  audit?: AuditTrail;
  now?: () => Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * How long a rotated secret still signs deliveries, and how old a pending delivery may be when its
 * webhook is enabled again (docs/operations.md, "Webhooks").
 */
export const PREVIOUS_SECRET_MS = DAY_MS;
export const RESUMABLE_DELIVERY_MS = DAY_MS;

const notFound = () => new AppError('NOT_FOUND', { message: 'no webhook with this id' });

/**
 * Where a webhook delivers, for audit events: the origin only. A receiver's path or query string
 * may carry a token of its own, and the trail is read by more people than the webhooks are.
 */
const originOf = (url: string) => new URL(url).origin;

/** Webhooks CRUD and secret rotation (admins only); the deliveries are the delivery engine's. */
export function createWebhookService({
  knex,
  box,
  allowPrivateTargets,
  audit = NO_AUDIT,
  now = () => new Date(),
}: WebhookServiceDeps) {
  function checkUrl(url: string): void {
    const problem = webhookUrlProblem(url, allowPrivateTargets);
    if (problem) throw validationError('url', problem);
  }

  return {
    async list(q: ListQuery): Promise<ListPage<WebhookView>> {
      const page = await webhooksRepository.list(knex, q);
      const at = now();
      return { items: page.items.map((w) => webhookView(w, at)), pagination: page.pagination };
    },

    async get(id: string): Promise<WebhookView> {
      const webhook = await webhooksRepository.findById(knex, id);
      if (!webhook) throw notFound();
      return webhookView(webhook, now());
    },

    /** The new webhook's id and its signing secret, which nothing returns again. */
    async create(input: WebhookCreate): Promise<{ id: string; secret: string }> {
      checkName('name', input.name);
      checkUrl(input.url);
      const id = newId();
      const secret = newWebhookSecret();
      const enabled = input.enabled ?? true;
      await inTransaction(knex, async (trx, afterCommit) => {
        await webhooksRepository.insert(
          trx,
          {
            id,
            name: input.name,
            url: input.url,
            events: input.events,
            enabled,
            secretSealed: box.seal(secret),
          },
          now(),
        );
        await audit.store(trx, afterCommit, {
          event: 'webhook.created',
          webhookId: id,
          name: input.name,
          origin: originOf(input.url),
          events: input.events,
          enabled,
        });
      });
      return { id, secret };
    },

    /**
     * Enabling a disabled webhook clears its failure state and, in the same transaction, makes
     * its pending deliveries due now, except those older than a day, which fail: a receiver back
     * after a long outage gets the recent events, not a day's backlog it can no longer use. The
     * events of the time it was disabled were never queued for it (the fan-out skips disabled
     * webhooks). Disabling clears the failure state too.
     */
    async patch(id: string, patch: WebhookPatch): Promise<void> {
      if (patch.url !== undefined) checkUrl(patch.url);
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          const current = await webhooksRepository.findForUpdate(trx, id);
          if (!current) throw notFound();
          checkName('name', patch.name, current.name);
          const at = now();
          const reenabled = patch.enabled === true && !current.enabled;
          // Enabling starts afresh; an admin's disabling is the admin's, whatever disabled it
          // before, and ends the run of failures (nothing is sent while it lasts).
          const cleared = reenabled || patch.enabled === false;
          const changes: WebhookChanges = {
            name: patch.name,
            url: patch.url,
            events: patch.events,
            enabled: patch.enabled,
            ...(cleared && { failingSince: null, disabledReason: null }),
          };
          const cutoff = new Date(at.getTime() - RESUMABLE_DELIVERY_MS);
          const deliveries = reenabled
            ? await webhookDeliveryListRepository.resume(trx, id, at, cutoff)
            : undefined;
          const updated = (await webhooksRepository.update(trx, id, changes, at))!;
          // Field names only, and of the URL its origin: never a path or query string.
          await audit.store(trx, afterCommit, {
            event: 'webhook.updated',
            webhookId: id,
            name: updated.name,
            fields: Object.keys(patch).sort(),
            ...(patch.url !== undefined && { origin: originOf(patch.url) }),
            ...(deliveries && {
              deliveriesResumed: deliveries.resumed,
              deliveriesExpired: deliveries.expired,
            }),
          });
          // The delivery engine writes the same webhook and delivery rows as it sends; a deadlock
          // with it wrote nothing here and is run again.
        },
        RETRY_DEADLOCKS,
      );
    },

    async remove(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        // Its deliveries and their attempts go with it (foreign keys ON DELETE CASCADE).
        const deleted = await webhooksRepository.delete(trx, id);
        if (!deleted) throw notFound();
        await audit.store(trx, afterCommit, { event: 'webhook.deleted', webhookId: id, name: deleted.name });
      });
    },

    /**
     * A new signing secret, returned this once; the one it replaces keeps signing (as a second
     * signature) for a day, so receivers can switch without losing deliveries.
     */
    async rotateSecret(id: string): Promise<WebhookSecretRotatedView> {
      const secret = newWebhookSecret();
      const at = now();
      const previousSecretExpiresAt = new Date(at.getTime() + PREVIOUS_SECRET_MS);
      await inTransaction(knex, async (trx, afterCommit) => {
        const rotated = await webhooksRepository.rotateSecret(
          trx,
          id,
          box.seal(secret),
          previousSecretExpiresAt,
          at,
        );
        if (!rotated) throw notFound();
        await audit.store(trx, afterCommit, {
          event: 'webhook.secret-rotated',
          webhookId: id,
          name: rotated.name,
        });
      });
      return { secret, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
