import type { ApiClient } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { out, outputWidth } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { filterString, listAll, withSessionApi } from './session-client.js';
import { formatTable } from './table.js';

const WEBHOOKS = '/edge/management/v1/webhooks';

interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  previousSecretExpiresAt: string | null;
}

interface Delivery {
  id: string;
  event: string;
  sequence: number;
  status: string;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
}

const item = (id: string) => `${WEBHOOKS}/${encodeURIComponent(id)}`;

/** A webhook by name first (what people type), else by id; an unknown one is an error. */
async function resolveWebhook(api: ApiClient, nameOrId: string): Promise<Webhook> {
  const [byName] = await listAll<Webhook>(api, WEBHOOKS, `name = ${filterString(nameOrId)}`);
  if (byName) return byName;
  try {
    return (await api.get<Webhook>(item(nameOrId))).data;
  } catch (err) {
    if (err instanceof CliError && err.message.includes('(NOT_FOUND')) {
      throw new CliError(`no webhook is named "${nameOrId}" or has that id`);
    }
    throw err;
  }
}

/** `a, b.*` → `['a', 'b.*']`. */
function eventList(text: string): string[] {
  return text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
}

/** The secret on a line of its own, said to be shown once, so nobody mistakes it for an id. */
function printSecret(ctx: CommandContext, secret: string): void {
  out(ctx.io, 'Signing secret (shown only now; the controller cannot show it again):');
  out(ctx.io, '');
  out(ctx.io, `  ${secret}`);
  out(ctx.io, '');
}

async function createWebhook(ctx: CommandContext): Promise<void> {
  const [name, url] = ctx.positionals as [string, string];
  const events = stringOption(ctx.values, 'events');
  if (events === undefined) throw new UsageError('svc edge create webhook needs --events <a,b.*>');
  const body = { name, url, events: eventList(events), enabled: ctx.values.disabled !== true };
  await withSessionApi(ctx.io, async (api) => {
    const { data } = await api.post<{ id: string; secret: string }>(WEBHOOKS, { body });
    if (ctx.json) return out(ctx.io, JSON.stringify({ id: data.id, name, secret: data.secret }, null, 2));
    out(ctx.io, `New webhook ${name} created, id: ${data.id}`);
    printSecret(ctx, data.secret);
    out(
      ctx.io,
      'Receivers verify deliveries with it (Standard Webhooks); rotate it with svc edge rotate webhook-secret.',
    );
  });
}

const enabledText = (w: Webhook) =>
  w.enabled ? 'true' : w.disabledReason ? `false (${w.disabledReason})` : 'false';

async function listWebhooks(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const items = await listAll<Webhook>(api, WEBHOOKS, ctx.positionals[0]);
    if (ctx.json) return out(ctx.io, JSON.stringify(items, null, 2));
    const rows = items.map((w) => [w.id, w.name, enabledText(w), w.events.join(','), w.url]);
    out(
      ctx.io,
      formatTable(['ID', 'NAME', 'ENABLED', 'EVENTS', 'URL'], rows, { width: outputWidth(ctx.io) }),
    );
    out(ctx.io, `results: ${items.length}`);
  });
}

function updateBody(ctx: CommandContext): Record<string, unknown> {
  const enabled = stringOption(ctx.values, 'enabled');
  const url = stringOption(ctx.values, 'url');
  const events = stringOption(ctx.values, 'events');
  if (enabled !== undefined && enabled !== 'true' && enabled !== 'false') {
    throw new UsageError('--enabled takes true or false');
  }
  const body = {
    ...(enabled !== undefined && { enabled: enabled === 'true' }),
    ...(url !== undefined && { url }),
    ...(events !== undefined && { events: eventList(events) }),
  };
  if (Object.keys(body).length === 0) {
    throw new UsageError('say what to change: --enabled true|false, --url <url> or --events <a,b.*>');
  }
  return body;
}

async function updateWebhook(ctx: CommandContext): Promise<void> {
  const body = updateBody(ctx);
  await withSessionApi(ctx.io, async (api) => {
    const target = await resolveWebhook(api, ctx.positionals[0]!);
    await api.request('PATCH', item(target.id), { body });
    const { data } = await api.get<Webhook>(item(target.id));
    if (ctx.json) return out(ctx.io, JSON.stringify(data, null, 2));
    out(ctx.io, `Updated webhook ${data.name} (id ${data.id}); enabled: ${enabledText(data)}`);
  });
}

async function deleteWebhook(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const target = await resolveWebhook(api, ctx.positionals[0]!);
    await api.delete(item(target.id));
    if (ctx.json) out(ctx.io, JSON.stringify({ id: target.id, deleted: true }));
    else out(ctx.io, `Deleted webhook ${target.name} (id ${target.id}) and its deliveries`);
  });
}

async function rotateSecret(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const target = await resolveWebhook(api, ctx.positionals[0]!);
    const { data } = await api.post<{ secret: string; previousSecretExpiresAt: string }>(
      `${item(target.id)}/rotate-secret`,
    );
    if (ctx.json) return out(ctx.io, JSON.stringify({ id: target.id, ...data }, null, 2));
    out(ctx.io, `New signing secret of webhook ${target.name} (id ${target.id})`);
    printSecret(ctx, data.secret);
    out(ctx.io, `The previous secret also signs deliveries until ${data.previousSecretExpiresAt}.`);
  });
}

const DEFAULT_DELIVERIES = 50;

/** The newest `limit` deliveries, page by page along the cursor. */
async function newestDeliveries(api: ApiClient, id: string, limit: number, filter?: string) {
  const items: Delivery[] = [];
  let cursor: string | undefined;
  let more = false;
  do {
    const { data, meta } = await api.get<Delivery[]>(`${item(id)}/deliveries`, {
      query: { filter, cursor, limit: Math.min(100, limit - items.length) },
    });
    items.push(...data);
    cursor = (meta.pagination as { nextCursor?: string | null } | undefined)?.nextCursor ?? undefined;
    more = cursor !== undefined;
  } while (more && items.length < limit);
  return { items, more };
}

async function listDeliveries(ctx: CommandContext): Promise<void> {
  const nameOrId = stringOption(ctx.values, 'webhook');
  if (!nameOrId) throw new UsageError('svc edge list webhook-deliveries needs --webhook <name|id>');
  const limitText = stringOption(ctx.values, 'limit');
  const limit = limitText === undefined ? DEFAULT_DELIVERIES : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit takes a positive whole number');
  await withSessionApi(ctx.io, async (api) => {
    const webhook = await resolveWebhook(api, nameOrId);
    const { items, more } = await newestDeliveries(api, webhook.id, limit, ctx.positionals[0]);
    if (ctx.json) return out(ctx.io, JSON.stringify(items, null, 2));
    const rows = items.map((d) => [
      d.id,
      String(d.sequence),
      d.event,
      d.status,
      String(d.attempts),
      d.lastError ?? (d.lastStatusCode === null ? '' : `HTTP ${d.lastStatusCode}`),
      d.createdAt,
      d.nextAttemptAt ?? '',
    ]);
    out(
      ctx.io,
      formatTable(
        ['ID', 'SEQUENCE', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST RESULT', 'CREATED AT', 'NEXT ATTEMPT'],
        rows,
        { width: outputWidth(ctx.io) },
      ),
    );
    out(ctx.io, `results: ${items.length}${more ? ` (the newest; older ones with --limit)` : ''}`);
  });
}

async function retryDelivery(ctx: CommandContext): Promise<void> {
  const [nameOrId, deliveryId] = ctx.positionals as [string, string];
  await withSessionApi(ctx.io, async (api) => {
    const webhook = await resolveWebhook(api, nameOrId);
    const { data } = await api.post<Delivery>(
      `${item(webhook.id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`,
    );
    if (ctx.json) return out(ctx.io, JSON.stringify(data, null, 2));
    out(ctx.io, `Delivery ${data.id} of webhook ${webhook.name} is due again (${data.event})`);
  });
}

export const webhookCommands: CommandSpec[] = [
  {
    words: ['edge', 'create', 'webhook'],
    args: '<name> <https url> --events <a,b.*>',
    summary: 'create a webhook and print its signing secret, once',
    options: { events: { type: 'string', short: 'e' }, disabled: { type: 'boolean' } },
    optionHelp: [
      ['-e, --events <a,b.*>', 'event names or prefixes such as identity.*, or * (required)'],
      ['--disabled', 'create it disabled'],
    ],
    positionals: { min: 2, max: 2 },
    run: createWebhook,
  },
  {
    words: ['edge', 'list', 'webhooks'],
    args: "['<filter>']",
    summary: "list webhooks, e.g. svc edge list webhooks 'enabled = false'",
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 1 },
    run: listWebhooks,
  },
  {
    words: ['edge', 'update', 'webhook'],
    args: '<name|id>',
    summary: 'enable or disable a webhook, or change its URL or events',
    options: { enabled: { type: 'string' }, url: { type: 'string' }, events: { type: 'string', short: 'e' } },
    optionHelp: [
      ['--enabled <true|false>', 'true also resumes its pending deliveries of the last 24 hours'],
      ['--url <https url>', 'where it delivers'],
      ['-e, --events <a,b.*>', 'the events it subscribes to, replacing the list'],
    ],
    positionals: { min: 1, max: 1 },
    run: updateWebhook,
  },
  {
    words: ['edge', 'delete', 'webhook'],
    args: '<name|id>',
    summary: 'delete a webhook with its deliveries',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    run: deleteWebhook,
  },
  {
    words: ['edge', 'rotate', 'webhook-secret'],
    args: '<name|id>',
    summary: 'issue a new signing secret; the old one still signs for 24 hours',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    run: rotateSecret,
  },
  {
    words: ['edge', 'list', 'webhook-deliveries'],
    args: "--webhook <name|id> ['<filter>']",
    summary: 'list the newest deliveries of a webhook, e.g. \'status = "failed"\'',
    options: { webhook: { type: 'string' }, limit: { type: 'string' } },
    optionHelp: [
      ['--webhook <name|id>', 'whose deliveries (required)'],
      ['--limit <n>', `how many of the newest (default ${DEFAULT_DELIVERIES})`],
    ],
    positionals: { min: 0, max: 1 },
    run: listDeliveries,
  },
  {
    words: ['edge', 'retry', 'webhook-delivery'],
    args: '<webhook name|id> <delivery id>',
    summary: 'send a pending or failed delivery again, now',
    options: {},
    optionHelp: [],
    positionals: { min: 2, max: 2 },
    run: retryDelivery,
  },
];
