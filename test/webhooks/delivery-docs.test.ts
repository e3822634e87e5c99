// The signature checks docs/operations.md ("Webhooks", "Delivery") shows receivers are run, as
// written, against a delivery the controller sent: the Node.js `verifyWebhook` functions with
// node, `verify_webhook` with python3. Each must accept the delivery and refuse it with another
// secret, an altered body or another webhook-id.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BINARIES, testNeeding } from '../helpers/system-binaries.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { insertWebhook, newWebhookSecret } from '../helpers/webhook-rows.js';
import { createIdentity, managementApi } from '../identities/identity-fixtures.js';

const root = resolve(process.cwd());
const FENCE = '`'.repeat(3);

/** The fenced blocks of `language` in "## Webhooks", "### Delivery". */
function blocks(language: string): string[] {
  const text = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('Webhooks\n'));
  const delivery = section?.split(/^### /m).find((s) => s.startsWith('Delivery\n'));
  if (!delivery) throw new Error('docs/operations.md: no "### Delivery" in "## Webhooks"');
  const pattern = new RegExp(`^${FENCE}${language}\\n([\\s\\S]*?)^${FENCE}$`, 'gm');
  return [...delivery.matchAll(pattern)].map((m) => m[1]!);
}

interface Case {
  secret: string;
  headers: Record<string, string>;
  body: string;
}

/** Runs `program` with the cases as JSON on stdin; answers what it prints, parsed. */
function run(command: string, file: string, cases: Case[]): Promise<boolean[]> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, [file], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${command} ${file} exited ${code}: ${err}`));
      else resolvePromise(JSON.parse(out) as boolean[]);
    });
    child.stdin.end(JSON.stringify({ cases }));
  });
}

const NODE_HARNESS = `
let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).cases.map(({ secret, headers, body }) => {
  try {
    return verifyWebhook(secret, headers, body) !== false;
  } catch {
    return false;
  }
});
console.log(JSON.stringify(results));
`;

const PYTHON_HARNESS = `
import json, sys
cases = json.load(sys.stdin)["cases"]
print(json.dumps([bool(verify_webhook(c["secret"], c["headers"], c["body"].encode())) for c in cases]))
`;

describe('the signature checks of docs/operations.md', () => {
  let receiver: WebhookReceiver;
  let server: TestServer;
  let dir: string;
  let delivered: ReceivedAttempt;
  let secret: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-webhook-docs-'));
    // The Node.js blocks import `standardwebhooks` as a receiver's project would.
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: receiver.controllerEnv });
    const hook = await insertWebhook(server.app.knex, {
      name: 'docs',
      url: receiver.urlFor('docs'),
      events: ['identity.created'],
    });
    secret = hook.secret;
    await createIdentity(managementApi(server, await server.adminToken()), {
      name: 'documented',
      isAdmin: false,
    });
    delivered = await waitFor(() => receiver.delivered('docs')[0], { what: 'a delivery' });
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The delivery as received, and three that must be refused. */
  const cases = (): Case[] => [
    { secret, headers: delivered.headers, body: delivered.body },
    { secret: newWebhookSecret(), headers: delivered.headers, body: delivered.body },
    {
      secret,
      headers: delivered.headers,
      body: delivered.body.replace('identity.created', 'identity.deleted'),
    },
    { secret, headers: { ...delivered.headers, 'webhook-id': `${delivered.id}x` }, body: delivered.body },
  ];
  const expected = [true, false, false, false];

  test('the sample body has the fields a delivery has', () => {
    const [sample] = blocks('json');
    const real = JSON.parse(delivered.body);
    const shown = JSON.parse(sample!);
    expect(Object.keys(shown)).toEqual(Object.keys(real));
    expect(Object.keys(real.data)).toEqual(
      expect.arrayContaining(['id', 'event', 'occurredAt', 'attempts', 'details']),
    );
    for (const key of Object.keys(shown.data))
      expect(['identityId', 'actorId', 'sourceAddress', 'requestId', ...Object.keys(real.data)]).toContain(
        key,
      );
  });

  test('both Node.js verifyWebhook functions accept the delivery and refuse the altered ones', async () => {
    const functions = blocks('js').filter((b) => b.includes('function verifyWebhook'));
    expect(functions).toHaveLength(2);
    for (const [i, code] of functions.entries()) {
      const file = join(dir, `verify-${i}.mjs`);
      writeFileSync(file, code + NODE_HARNESS);
      expect(await run(process.execPath, file, cases())).toEqual(expected);
    }
  });

  testNeeding([BINARIES.python3])(
    'the Python verify_webhook accepts the delivery and refuses the altered ones',
    async () => {
      const [code] = blocks('python').filter((b) => b.includes('def verify_webhook'));
      expect(code).toBeDefined();
      const file = join(dir, 'verify.py');
      writeFileSync(file, code + PYTHON_HARNESS);
      expect(await run(BINARIES.python3.path, file, cases())).toEqual(expected);
    },
  );
});
