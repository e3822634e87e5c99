import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { createIdentity, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import {
  receiverPki,
  startReceiver,
  type Receiver,
  type ReceiverHandler,
} from '../webhooks/webhook-receiver.js';

/** Hostile receivers write this in their answers; no stored or returned error may repeat it. */
export const RECEIVER_MARKER = 'RECEIVER-BYTES-5c1d9e';

/**
 * Real HTTPS receivers on 127.0.0.1, their certificates from one test CA (valid for 127.0.0.1,
 * ::1 and `hosts`), and the settings of a controller that trusts that CA.
 */
export async function hostileReceivers(hosts: string[] = []) {
  const { ca, leaf } = await receiverPki(['127.0.0.1', '::1', ...hosts]);
  const dir = mkdtempSync(join(tmpdir(), 'svc-hostile-receivers-'));
  const caFile = join(dir, 'receiver-ca.pem');
  writeFileSync(caFile, ca.certPem);
  const started: Receiver[] = [];
  return {
    ca: ca.certPem,
    /** A controller delivering to these receivers: private targets allowed (127.0.0.1), the CA trusted. */
    privateTargetsEnv: { SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', SVC_WEBHOOKS_CA: caFile },
    /** A receiver recording every request; `handle` answers (204 without one). */
    async start(handle?: ReceiverHandler): Promise<Receiver> {
      const receiver = await startReceiver(leaf, handle);
      started.push(receiver);
      return receiver;
    },
    async close(): Promise<void> {
      await Promise.all(started.map((r) => r.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A delivery as `GET /webhooks/{id}/deliveries` answers it. */
export interface DeliveryView {
  id: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  history: { attemptedAt: string; statusCode: number | null; error: string | null; durationMs: number }[];
}

/** The management API calls of the delivery tests, as an admin. */
export async function webhookAdmin(server: TestServer) {
  const api: ManagementApi = managementApi(server, await server.adminToken());
  return {
    api,
    /** A webhook subscribed to `identity.created`, made through the API; its id. */
    async create(name: string, url: string): Promise<string> {
      const res = await api.post('/webhooks', { body: { name, url, events: ['identity.created'] } });
      if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
      return res.body.data.id as string;
    },
    /** Creates an identity: one `identity.created` event for every webhook made before. */
    event: (name: string) => createIdentity(api, { name, isAdmin: false }),
    /** The webhook's deliveries, newest first, and the raw text of the answer. */
    async deliveries(webhookId: string): Promise<{ list: DeliveryView[]; text: string }> {
      const res = await api.get(`/webhooks/${webhookId}/deliveries`);
      if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${res.text}`);
      return { list: res.body.data as DeliveryView[], text: res.text };
    },
    /** Waits for the webhook's only delivery to have `attempts` attempts recorded, and answers it. */
    async attempted(webhookId: string, attempts = 1): Promise<DeliveryView> {
      return waitFor(
        async () => {
          const { list } = await this.deliveries(webhookId);
          return list.length === 1 && list[0]!.attempts >= attempts && list[0]!;
        },
        { what: `attempt ${attempts} of the delivery to webhook ${webhookId}`, timeout: 30_000 },
      );
    },
  };
}

/** Every error the database holds of webhook deliveries and their attempts. */
export async function storedDeliveryErrors(server: TestServer): Promise<string[]> {
  const knex = server.app.knex;
  const deliveries = await knex('webhook_deliveries').whereNotNull('last_error').pluck('last_error');
  const attempts = await knex('webhook_delivery_attempts').whereNotNull('error').pluck('error');
  return [...deliveries, ...attempts] as string[];
}

/** A logger for a test server that keeps every line, down to debug, for the test to search. */
export function keptLog() {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (chunk: string) => void lines.push(chunk) });
  return { logger, text: () => lines.join('') };
}
