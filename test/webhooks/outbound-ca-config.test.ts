import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { createOutboundPost } from '../../src/services/webhooks/outbound-post.js';
import { receiverPki, startReceiver, type Receiver } from './webhook-receiver.js';

let pki: Awaited<ReturnType<typeof receiverPki>>;
let other: Awaited<ReturnType<typeof receiverPki>>;
let receiver: Receiver;

beforeAll(async () => {
  pki = await receiverPki();
  other = await receiverPki();
  receiver = await startReceiver(pki.leaf);
});

afterAll(() => receiver.close());

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-webhooks-ca-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const problem = (load: () => unknown) => {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('webhooks.ca is read at start', () => {
  test('unset: no extra certificates, private targets refused', () => {
    const c = loadConfig({ env: {}, cwd: dirWith({}) });
    expect(c.webhooks).toEqual({ allowPrivateTargets: false, caPem: undefined });
  });

  test('SVC_WEBHOOKS_CA: its certificates, the text around them left out; the receiver it signed is trusted', async () => {
    const cwd = dirWith({
      'ca.pem': `# our CAs\n${other.ca.certPem}\nsome comment\n${pki.ca.certPem}\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`,
    });
    const c = loadConfig({
      env: { SVC_WEBHOOKS_CA: 'ca.pem', SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' },
      cwd,
    });
    expect(c.webhooks.allowPrivateTargets).toBe(true);
    expect(c.webhooks.ca).toBe('ca.pem');
    expect(c.webhooks.caPem).toBe(`${other.ca.certPem.trim()}\n${pki.ca.certPem.trim()}\n`);
    const post = createOutboundPost({
      allowPrivateTargets: c.webhooks.allowPrivateTargets,
      extraCa: c.webhooks.caPem,
    });
    expect((await post(receiver.url(), '{}', {})).status).toBe(204);
  });

  test('a file that cannot be read stops the start, naming the setting and the variable', () => {
    const cwd = dirWith({});
    expect(problem(() => loadConfig({ env: { SVC_WEBHOOKS_CA: 'missing.pem' }, cwd }))).toBe(
      `invalid configuration: webhooks.ca (SVC_WEBHOOKS_CA): cannot read ${join(cwd, 'missing.pem')} (ENOENT)`,
    );
  });

  test('a file without certificates stops the start', () => {
    const cwd = dirWith({ 'key.pem': pki.leaf.keyPem });
    expect(problem(() => loadConfig({ env: { SVC_WEBHOOKS_CA: 'key.pem' }, cwd }))).toBe(
      `invalid configuration: webhooks.ca (SVC_WEBHOOKS_CA): ${join(cwd, 'key.pem')} holds no PEM certificate`,
    );
  });

  test('a certificate block that does not parse stops the start', () => {
    const broken = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
    const cwd = dirWith({ 'ca.pem': pki.ca.certPem + broken });
    expect(problem(() => loadConfig({ env: { SVC_WEBHOOKS_CA: 'ca.pem' }, cwd }))).toBe(
      `invalid configuration: webhooks.ca (SVC_WEBHOOKS_CA): certificate 2 of ${join(cwd, 'ca.pem')} does not parse`,
    );
  });

  test('set in YAML: the message names the setting alone', () => {
    const cwd = dirWith({ 'c.yaml': 'webhooks:\n  ca: nowhere.pem\n' });
    expect(problem(() => loadConfig({ env: { SVC_CONFIG: 'c.yaml' }, cwd }))).toBe(
      `invalid configuration: webhooks.ca: cannot read ${join(cwd, 'nowhere.pem')} (ENOENT)`,
    );
  });
});
