import { DEFAULT_DELIVERY_LIMIT, MAX_DELIVERY_LIMIT } from '../schemas/webhook-delivery-schemas.js';
import { dataEnvelope } from './components.js';
import { admin, crud } from './crud-routes.js';
import { obj, ref } from './json-schema.js';
import type { RouteDoc } from './operations.js';
import { dataResponse } from './session-paths.js';

const TAG = 'Webhooks';

const DELIVERIES_DESCRIPTION =
  'Newest first (by `sequence`), paged by cursor: pass `meta.pagination.nextCursor` as `cursor` for the ' +
  'next, older page; it is null on the last. Each delivery carries its latest 50 attempts. Filters: ' +
  '`status` (`pending`, `succeeded`, `failed`), `event`, and ranges on `createdAt`; `offset` and `sort` ' +
  'are refused (400). An unknown webhook is 404.';

const deliveryParameters = [
  {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: MAX_DELIVERY_LIMIT, default: DEFAULT_DELIVERY_LIMIT },
  },
  {
    name: 'cursor',
    in: 'query',
    description: 'The `meta.pagination.nextCursor` of the page before; omitted for the newest page.',
    schema: { type: 'string' },
  },
  { $ref: '#/components/parameters/filter' },
];

/** Webhooks: subscriptions to stored audit events, their signing secrets and their deliveries. */
export function webhookRoutes(): RouteDoc[] {
  const {
    list,
    create,
    get,
    patch,
    delete: remove,
  } = crud(
    {
      path: '/webhooks',
      tag: TAG,
      singular: 'Webhook',
      plural: 'Webhooks',
      noun: 'webhook',
      nouns: 'webhooks',
      view: 'Webhook',
      create: 'WebhookCreate',
      replace: 'WebhookCreate',
      patch: 'WebhookPatch',
    },
    {
      patch: { errors: ['CONFLICT'] },
      delete: { description: 'Its pending and past deliveries go with it.' },
    },
  );
  return [
    list,
    {
      ...create,
      description:
        'Answers the signing secret (`whsec_…`, Standard Webhooks) this once; it is stored sealed and ' +
        'never shown again. A name already taken is 409.',
      response: {
        status: 201,
        description: 'Created, with the secret.',
        schema: dataEnvelope(ref('WebhookCreated')),
      },
      errors: ['CONFLICT'],
    },
    get,
    patch,
    remove,
    {
      ...admin,
      method: 'post',
      path: '/webhooks/:id/rotate-secret',
      operationId: 'rotateWebhookSecret',
      summary: 'Issue a new signing secret; the previous one keeps signing for 24 hours',
      description:
        'Answers the new secret this once. Until `previousSecretExpiresAt` every delivery carries a ' +
        'signature with each secret, so receivers can switch without losing one; a rotation within those ' +
        '24 hours drops the secret before the previous one at once.',
      tag: TAG,
      parsesBody: true,
      response: dataResponse('The new secret.', 'WebhookSecretRotated'),
    },
    {
      ...admin,
      method: 'get',
      path: '/webhooks/:id/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: "List a webhook's deliveries with their attempts",
      description: DELIVERIES_DESCRIPTION,
      tag: TAG,
      parameters: deliveryParameters,
      response: {
        status: 200,
        description: 'A page.',
        schema: obj(
          { data: { type: 'array', items: ref('WebhookDelivery') }, meta: ref('WebhookDeliveryListMeta') },
          [],
          { additionalProperties: false },
        ),
      },
    },
    {
      ...admin,
      method: 'post',
      path: '/webhooks/:id/deliveries/:deliveryId/retry',
      operationId: 'retryWebhookDelivery',
      summary: 'Send a pending or failed delivery again, now',
      description:
        'The delivery becomes pending and due now; it is sent while its webhook is enabled. A delivery ' +
        'that succeeded is 409 `DELIVERY_ALREADY_SUCCEEDED`; an unknown webhook or delivery 404.',
      tag: TAG,
      parsesBody: true,
      response: dataResponse('The delivery, pending.', 'WebhookDelivery'),
      errors: ['DELIVERY_ALREADY_SUCCEEDED'],
    },
  ];
}
