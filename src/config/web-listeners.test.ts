import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mappedIPv4, parseCidr } from './cidr.js';
import { loadConfig } from './load-config.js';

function fromYaml(yaml: string, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-web-'));
  writeFileSync(join(dir, 'c.yaml'), yaml);
  return loadConfig({ env: { SVC_CONFIG: 'c.yaml', ...env }, cwd: dir });
}

/** Edge bindings per listener (metrics are checked on their own). */
const bindings = (c: ReturnType<typeof fromYaml>) =>
  Object.fromEntries(
    c.listeners.map((l) => [l.name, [...l.apis.keys()].filter((b) => b !== 'metrics').sort()]),
  );

const twoListeners = (oidcExplicit: boolean, disable = false) => `
edge:
  api: { disableOidcAutoBinding: ${disable} }
web:
  - name: main
    bindPoints: [ { interface: 127.0.0.1:1280, address: ctrl.example.com:1280 } ]
    apis: [ { binding: edge-management }, { binding: edge-client } ]
  - name: side
    bindPoints: [ { interface: 127.0.0.1:1281, address: login.example.com:1281 } ]
    apis: [ { binding: ${oidcExplicit ? 'edge-oidc' : 'edge-client'} } ]
`;

describe('listener bindings', () => {
  test('the default listener hosts client and management, with OIDC bound automatically', () => {
    const c = loadConfig({
      env: { SVC_ADDRESS: '127.0.0.1:1443' },
      cwd: mkdtempSync(join(tmpdir(), 'svc-')),
    });
    expect(c.listeners).toHaveLength(1);
    expect([...c.listeners[0]!.apis.keys()].sort()).toEqual([
      'edge-client',
      'edge-management',
      'edge-oidc',
      'metrics',
    ]);
    expect(c.listeners[0]!.addresses).toEqual(['localhost:1443', '127.0.0.1:1443']);
    expect(c.listeners[0]!.interfaces).toEqual(['127.0.0.1:1443']);
  });

  test('auto-binding adds edge-oidc to every listener hosting edge-client', () => {
    expect(bindings(fromYaml(twoListeners(false)))).toEqual({
      main: ['edge-client', 'edge-management', 'edge-oidc'],
      side: ['edge-client', 'edge-oidc'],
    });
  });

  test('disableOidcAutoBinding leaves OIDC only where it is listed', () => {
    expect(bindings(fromYaml(twoListeners(false, true)))).toEqual({
      main: ['edge-client', 'edge-management'],
      side: ['edge-client'],
    });
    expect(bindings(fromYaml(twoListeners(true, true)))).toEqual({
      main: ['edge-client', 'edge-management'],
      side: ['edge-oidc'],
    });
  });

  test('an explicit edge-oidc binding suppresses auto-binding', () => {
    expect(bindings(fromYaml(twoListeners(true)))).toEqual({
      main: ['edge-client', 'edge-management'],
      side: ['edge-oidc'],
    });
  });

  test('binding options carry the redirect URIs of that listener', () => {
    const c = fromYaml(`
edge: {}
web:
  - name: oidc-only
    bindPoints: [ { interface: 0.0.0.0:1281, address: login.example.com:1281 } ]
    apis: [ { binding: edge-oidc, options: { redirectURIs: ["https://app.example.com/auth/callback"] } } ]
`);
    expect(c.listeners[0]!.apis.get('edge-oidc')).toEqual({
      redirectURIs: ['https://app.example.com/auth/callback'],
    });
  });

  test('without an edge section no edge API is served at all', () => {
    const c = fromYaml(twoListeners(true).replace(/^edge:\n.*\n/m, ''));
    expect(c.edge).toBeUndefined();
    expect(bindings(c)).toEqual({ main: [], side: [] });
  });

  test('metrics are served everywhere unless one listener lists them, and nowhere when disabled', () => {
    const withMetrics = (c: ReturnType<typeof fromYaml>) =>
      c.listeners.filter((l) => l.apis.has('metrics')).map((l) => l.name);
    expect(withMetrics(fromYaml(twoListeners(false)))).toEqual(['main', 'side']);
    expect(withMetrics(fromYaml(twoListeners(false), { SVC_METRICS_ENABLED: 'false' }))).toEqual([]);
    const explicit =
      twoListeners(false) +
      `  - name: ops\n    bindPoints: [ { interface: 127.0.0.1:9090 } ]\n    apis: [ { binding: metrics } ]\n`;
    expect(withMetrics(fromYaml(explicit))).toEqual(['ops']);
  });

  test('SVC_METRICS_ADDRESS moves /metrics off the API listeners to a listener of its own', () => {
    const c = loadConfig({
      env: { SVC_ADDRESS: '0.0.0.0:1280', SVC_METRICS_ADDRESS: '0.0.0.0:9090' },
      cwd: tmpdir(),
    });
    expect(c.listeners.map((l) => [l.name, l.interfaces, [...l.apis.keys()].sort()])).toEqual([
      ['default', ['0.0.0.0:1280'], ['edge-client', 'edge-management', 'edge-oidc']],
      ['metrics', ['0.0.0.0:9090'], ['metrics']],
    ]);
    // Addresses that would fail to bind together are refused before anything starts.
    for (const [api, metrics] of [
      ['0.0.0.0:1280', '0.0.0.0:1280'],
      ['0.0.0.0:1280', '127.0.0.1:1280'],
      ['127.0.0.1:1280', 'localhost:1280'],
      ['[::]:1280', '10.0.0.5:1280'],
    ])
      expect(() =>
        loadConfig({ env: { SVC_ADDRESS: api!, SVC_METRICS_ADDRESS: metrics! }, cwd: tmpdir() }),
      ).toThrow(`metrics.address (SVC_METRICS_ADDRESS): ${metrics} clashes with listener default's ${api}`);
    const apart = loadConfig({
      env: { SVC_ADDRESS: '10.0.0.4:1280', SVC_METRICS_ADDRESS: '10.0.0.5:1280' },
      cwd: tmpdir(),
    });
    expect(apart.listeners.map((l) => l.name)).toEqual(['default', 'metrics']);
  });

  test('with SVC_METRICS_ADDRESS, a web listener that lists metrics no longer serves them; a listener named metrics is refused', () => {
    const yaml = `edge: {}
web:
  - name: main
    bindPoints: [ { interface: 127.0.0.1:1280 } ]
    apis: [ { binding: edge-client }, { binding: metrics } ]
`;
    const c = fromYaml(yaml, { SVC_METRICS_ADDRESS: '127.0.0.1:9090' });
    expect(c.listeners.filter((l) => l.apis.has('metrics')).map((l) => l.interfaces)).toEqual([
      ['127.0.0.1:9090'],
    ]);
    expect(() =>
      fromYaml(yaml.replace('name: main', 'name: metrics'), { SVC_METRICS_ADDRESS: '127.0.0.1:9090' }),
    ).toThrow('a web listener is already named metrics');
    const off = loadConfig({
      env: { SVC_METRICS_ENABLED: 'false', SVC_METRICS_ADDRESS: '127.0.0.1:9090' },
      cwd: tmpdir(),
    });
    expect(off.listeners.map((l) => l.name)).toEqual(['default']);
    expect(off.warnings).toContain(
      'metrics.address is set but metrics.enabled is false: no metrics listener is started',
    );
  });

  test('two listeners on one interface are refused', () => {
    expect(() =>
      fromYaml(`
edge: {}
web:
  - { name: a, bindPoints: [ { interface: 127.0.0.1:1280 } ], apis: [ { binding: edge-client } ] }
  - { name: b, bindPoints: [ { interface: 127.0.0.1:1280 } ], apis: [ { binding: edge-management } ] }
`),
    ).toThrow('invalid configuration: web: interface 127.0.0.1:1280 is used by listeners a and b');
  });
});

describe('proxyProtocol', () => {
  const fromEnv = (env: Record<string, string>) =>
    loadConfig({ env, cwd: mkdtempSync(join(tmpdir(), 'svc-')) });

  test('unset: no listener reads PROXY headers', () => {
    expect(fromEnv({}).listeners[0]!.proxyProtocol).toBeUndefined();
    expect(fromEnv({ SVC_PROXY_PROTOCOL_TRUSTED_FROM: '' }).listeners[0]!.proxyProtocol).toBeUndefined();
    expect(bindings(fromYaml(twoListeners(false)))).toBeDefined();
    expect(fromYaml(twoListeners(false)).listeners.map((l) => l.proxyProtocol)).toEqual([
      undefined,
      undefined,
    ]);
  });

  test('the variable sets it for the default listener: addresses and CIDR ranges, IPv4 and IPv6', () => {
    const c = fromEnv({ SVC_PROXY_PROTOCOL_TRUSTED_FROM: '10.0.0.0/8, 192.0.2.7,2001:db8::/32' });
    expect(c.listeners[0]!.proxyProtocol).toEqual({
      trustedFrom: ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32'],
    });
  });

  test('a web listener sets its own; the others stay without', () => {
    const yaml = twoListeners(false).replace(
      '    apis: [ { binding: edge-management }, { binding: edge-client } ]',
      '    apis: [ { binding: edge-management }, { binding: edge-client } ]\n    proxyProtocol: { trustedFrom: [ 10.1.0.0/16 ] }',
    );
    expect(fromYaml(yaml).listeners.map((l) => l.proxyProtocol)).toEqual([
      { trustedFrom: ['10.1.0.0/16'] },
      undefined,
    ]);
  });

  test('a malformed range is refused, naming the key and the variable', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0/8', 'proxy.example.com', '::1/129', '10.0.0.0/08']) {
      expect(() => fromEnv({ SVC_PROXY_PROTOCOL_TRUSTED_FROM: bad })).toThrow(
        /proxyProtocol\.trustedFrom\.0 \(SVC_PROXY_PROTOCOL_TRUSTED_FROM\): must be an address or CIDR/,
      );
    }
  });

  test('an IPv4-mapped range under /96 is refused, naming the setting; from /96 on it is the IPv4 range', () => {
    // ::ffff:10.0.0.0/8 reads like 10/8 but is ::/8, which holds every IPv4 client as ::ffff:a.b.c.d.
    for (const bad of ['::ffff:10.0.0.0/8', '::ffff:a00:0/95', '::FFFF:127.0.0.1/0']) {
      expect(() => fromEnv({ SVC_PROXY_PROTOCOL_TRUSTED_FROM: bad })).toThrow(
        /proxyProtocol\.trustedFrom\.0 \(SVC_PROXY_PROTOCOL_TRUSTED_FROM\): .*IPv4-mapped range needs a prefix of at least 96/,
      );
    }
    const c = fromEnv({ SVC_PROXY_PROTOCOL_TRUSTED_FROM: '::ffff:10.0.0.0/104,::ffff:192.0.2.7' });
    expect(c.listeners[0]!.proxyProtocol).toEqual({
      trustedFrom: ['::ffff:10.0.0.0/104', '::ffff:192.0.2.7'],
    });
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual({ network: '10.0.0.0', prefix: 8, type: 'ipv4' });
    expect(parseCidr('::ffff:a00:0/104')).toEqual({ network: '10.0.0.0', prefix: 8, type: 'ipv4' });
    expect(parseCidr('::ffff:192.0.2.7')).toEqual({ network: '192.0.2.7', prefix: 32, type: 'ipv4' });
    expect(parseCidr('::/0')).toEqual({ network: '::', prefix: 0, type: 'ipv6' });
    expect(parseCidr('fe80::1%eth0')).toBeUndefined();
    expect(mappedIPv4('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(mappedIPv4('::1')).toBeUndefined();
    expect(mappedIPv4('64:ff9b::7f00:2')).toBeUndefined();
  });

  test('the default-listener setting beside a web section is refused rather than ignored', () => {
    expect(() => fromYaml(twoListeners(false), { SVC_PROXY_PROTOCOL_TRUSTED_FROM: '10.0.0.0/8' })).toThrow(
      'proxyProtocol.trustedFrom applies to the default listener only',
    );
  });
});
