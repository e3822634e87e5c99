import type { Knex } from 'knex';
import { AppError } from '../../errors/app-error.js';
import { webhookDeliveryListRepository } from '../../repositories/webhook-delivery-list-repository.js';
import { webhooksRepository } from '../../repositories/webhooks-repository.js';
import type { DeliveryListQuery } from '../../schemas/webhook-delivery-schemas.js';
import type { WebhookDeliveryView } from '../../schemas/webhook-views.js';
import { webhookDeliveryView } from './webhook-delivery-view.js';

export interface WebhookDeliveryAdminDeps {
  knex: Knex;
  now?: () => Date;
}

export interface DeliveryListPage {
  items: WebhookDeliveryView[];
  pagination: { limit: number; nextCursor: string | null };
}

const noWebhook = () => new AppError('NOT_FOUND', { message: 'no webhook with this id' });
const noDelivery = () => new AppError('NOT_FOUND', { message: 'the webhook has no delivery with this id' });

/** What an admin sees of a webhook's deliveries, and the retry of one by hand. */
export function createWebhookDeliveryAdmin({ knex, now = () => new Date() }: WebhookDeliveryAdminDeps) {
  return {
    async list(webhookId: string, q: DeliveryListQuery): Promise<DeliveryListPage> {
      if (!(await webhooksRepository.findById(knex, webhookId))) throw noWebhook();
      const page = await webhookDeliveryListRepository.page(knex, webhookId, q);
      return {
        items: page.items.map(webhookDeliveryView),
        pagination: { limit: q.limit, nextCursor: page.next ?? null },
      };
    },

    /**
     * A pending or failed delivery becomes due now (one statement); the delivery engine sends it
     * while its webhook is enabled. A delivery that succeeded is not sent again: 409.
     */
    async retry(webhookId: string, deliveryId: string): Promise<WebhookDeliveryView> {
      const retried = await webhookDeliveryListRepository.retry(knex, webhookId, deliveryId, now());
      if (retried) return webhookDeliveryView(retried);
      // Refused: tell an unknown delivery (or webhook) from one that already succeeded.
      const found = await webhookDeliveryListRepository.find(knex, webhookId, deliveryId);
      if (!found) {
        if (!(await webhooksRepository.findById(knex, webhookId))) throw noWebhook();
        throw noDelivery();
      }
      throw new AppError('DELIVERY_ALREADY_SUCCEEDED');
    },
  };
}

export type WebhookDeliveryAdmin = ReturnType<typeof createWebhookDeliveryAdmin>;
