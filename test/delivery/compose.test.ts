// Delivery files (Dockerfile, docker-compose.yml, .env.example, config.example.yaml): checks that
// need no Docker engine. .ci/run additionally validates the compose file with docker-compose 1.29.
import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.js';

const root = resolve(process.cwd());
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The named variables of the configuration reference (docs/operations.md). */
const SECTION_1_VARIABLES = [
  'DATABASE_URL',
  'SVC_DATA_DIR',
  'SVC_CONFIG',
  'SVC_ADDRESS',
  'SVC_ADVERTISED_ADDRESS',
  'SVC_ADMIN_USERNAME',
  'SVC_ADMIN_PASSWORD',
  'SVC_MASTER_KEY',
  'SVC_OIDC_ACCESS_TOKEN_DURATION',
  'SVC_OIDC_ID_TOKEN_DURATION',
  'SVC_OIDC_REFRESH_TOKEN_DURATION',
  'SVC_OIDC_REDIRECT_URIS',
  'SVC_OIDC_POST_LOGOUT_URIS',
  'SVC_CORS_ORIGINS',
  'LOG_LEVEL',
];

interface ComposeService {
  build?: unknown;
  profiles?: string[];
  /** A list of names, or names mapped to settings such as a fixed address. */
  networks?: string[] | Record<string, { ipv4_address?: string } | null>;
  image?: string;
  env_file?: string | string[];
  environment?: Record<string, string>;
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition?: string }>;
  ports?: string[];
  volumes?: string[];
}
interface ComposeFile {
  version?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, { ipam?: { config?: { subnet?: string; gateway?: string }[] } }>;
  [key: string]: unknown;
}

// `merge`: the replicas share their settings through a `<<: *replica` merge key.
const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as ComposeFile;
const dockerfile = read('Dockerfile');
const envExample = read('.env.example');

/** `# NAME=value` lines: the documented defaults (empty value = unset). */
const documented = new Map(
  [...envExample.matchAll(/^#\s*([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.trim()]),
);

/** The JSON exec form of the Dockerfile's HEALTHCHECK CMD (it may continue over `\` lines). */
function dockerfileHealthcheck(): string[] {
  const joined = dockerfile.replace(/\\\n\s*/g, ' ');
  const line = joined.split('\n').find((l) => l.startsWith('HEALTHCHECK '));
  expect(line).toBeDefined();
  const json = line!.slice(line!.indexOf('CMD ') + 4).trim();
  return JSON.parse(json) as string[];
}

describe('docker-compose.yml', () => {
  test('stays within the docker-compose v1.29 subset', () => {
    expect(compose.version).toBe('3.8');
    expect(Object.keys(compose)).not.toContain('name');
    expect(Object.keys(compose)).not.toContain('include');
  });

  test('runs postgres 15 with a pg_isready healthcheck and a volume', () => {
    const pg = compose.services.postgres!;
    expect(pg.image).toBe('postgres:15');
    expect(pg.healthcheck?.test).toContain('pg_isready');
    expect(pg.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data'))).toBe(true);
  });

  test('configures the controller through the env file and the Docker defaults', () => {
    const c = compose.services.controller!;
    expect(c.build).toBe('.');
    expect(c.env_file).toBe('.env');
    expect(c.environment).toMatchObject({
      DATABASE_URL: 'postgres://svc:${POSTGRES_PASSWORD}@postgres:5432/svc',
      SVC_ADDRESS: '0.0.0.0:1280',
      SVC_DATA_DIR: '/var/lib/svc',
    });
    expect(c.environment?.SVC_ADVERTISED_ADDRESS).toMatch(/localhost:1280/);
    expect(c.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(c.ports).toEqual(['1280:1280']);
    const dataVolume = c.volumes?.find((v) => v.endsWith(':/var/lib/svc'));
    expect(dataVolume).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(dataVolume!.split(':')[0]);
  });

  test('checks the controller over HTTPS with its CA, exactly as the Dockerfile does', () => {
    const hc = compose.services.controller!.healthcheck?.test;
    expect(hc?.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    const script = hc![3]!;
    expect(script).toContain('/health/ready');
    expect(script).toContain("/pki/ca.pem'");
    expect(script).not.toMatch(/rejectUnauthorized/);
    expect(script).not.toContain('$'); // compose would interpolate it
    expect(dockerfileHealthcheck()).toEqual(['node', '-e', script]);
    // The script itself is valid JavaScript.
    expect(() => new Function('require', 'process', script)).not.toThrow();
  });

  test('needs POSTGRES_PASSWORD, which .env.example sets', () => {
    expect(read('docker-compose.yml')).toContain('${POSTGRES_PASSWORD:?');
    expect(parseDotenv(envExample).POSTGRES_PASSWORD).toBeTruthy();
  });
});

describe('docker-compose.yml, profile replicated', () => {
  const replicas = ['controller-a', 'controller-b'].map((name) => compose.services[name]!);
  const haproxy = compose.services.haproxy!;
  const haproxyCfg = read('deploy/haproxy/haproxy.cfg');
  /** `${NAME:-default}` → default, as compose reads it without that variable. */
  const withDefaults = (v: string) => v.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');

  test('the single controller stays in the default profile; the replicas and HAProxy only in replicated', () => {
    expect(compose.services.controller!.profiles).toBeUndefined();
    expect(compose.services.postgres!.profiles).toBeUndefined();
    for (const s of [...replicas, haproxy]) expect(s.profiles).toEqual(['replicated']);
  });

  test('two replicas on the shared PostgreSQL, advertising the proxy address, sharing rate limits', () => {
    for (const r of replicas) {
      expect(r.image).toBe('svc-controller:local');
      expect(r.env_file).toBe('.env');
      expect(r.depends_on?.postgres?.condition).toBe('service_healthy');
      expect(r.environment?.DATABASE_URL).toBe(compose.services.controller!.environment!.DATABASE_URL);
      expect(withDefaults(r.environment!.SVC_ADVERTISED_ADDRESS!)).toBe('localhost:1443');
      // Behind round robin, a per-process count would multiply each limit by the replicas.
      expect(r.environment?.SVC_RATE_LIMITS_STORE).toBe('postgres');
      expect(r.networks).toEqual(['default', 'proxied']);
      expect(r.ports).toBeUndefined(); // reachable through HAProxy only
    }
    expect(haproxy.ports).toEqual(['1443:1280']);
    expect(haproxy.volumes).toContain('./deploy/haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    // Each replica keeps its own data directory.
    const dataVolumes = replicas.map((r) => r.volumes!.find((v) => v.endsWith(':/var/lib/svc')));
    expect(new Set(dataVolumes).size).toBe(2);
  });

  test("the replicas trust the PROXY protocol from HAProxy's fixed address alone, never the network's gateway", () => {
    const networks = haproxy.networks as Record<string, { ipv4_address?: string } | null>;
    expect(Object.keys(networks)).toEqual(['proxied']);
    const address = networks.proxied?.ipv4_address;
    expect(address).toBe('${SVC_PROXY_ADDRESS:-172.29.240.254}');
    // The same expression: one variable sets both, so they cannot drift apart.
    for (const r of replicas) expect(r.environment!.SVC_PROXY_PROTOCOL_TRUSTED_FROM).toBe(address);

    const proxied = compose.networks!.proxied!.ipam!.config![0]!;
    const toNumber = (ip: string) => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
    const [network, bits] = withDefaults(proxied.subnet!).split('/');
    const size = 2 ** (32 - Number(bits));
    const first = toNumber(network!);
    const ip = toNumber(withDefaults(address!));
    // Inside the subnet, and neither its network address, its broadcast address nor its gateway:
    // Docker's bridge gateway is the subnet's first address unless the compose file names one,
    // and connections from the host to a replica come from it.
    expect(proxied.gateway).toBeUndefined();
    expect(ip).toBeGreaterThan(first + 1);
    expect(ip).toBeLessThan(first + size - 1);
  });

  test(".env.example shows the profile's variables with the defaults the compose file uses", () => {
    const raw = read('docker-compose.yml');
    for (const name of ['SVC_REPLICATED_ADDRESS', 'SVC_PROXIED_SUBNET', 'SVC_PROXY_ADDRESS']) {
      const defaults = [...raw.matchAll(new RegExp(`\\$\\{${name}:-([^}]*)\\}`, 'g'))].map((m) => m[1]);
      expect(defaults.length).toBeGreaterThan(0);
      expect(new Set(defaults)).toEqual(new Set([documented.get(name)]));
    }
  });

  test("the replicas' environment is a valid configuration: PROXY protocol, shared rate limits, metrics off the proxied port", () => {
    const env = Object.fromEntries(
      Object.entries(replicas[0]!.environment!).map(([k, v]) => [k, withDefaults(v)]),
    );
    const cwd = mkdtempSync(join(tmpdir(), 'svc-delivery-'));
    try {
      const config = loadConfig({ env: { ...env, POSTGRES_PASSWORD: 'x' }, cwd });
      expect(config.listeners[0]!.proxyProtocol).toEqual({ trustedFrom: ['172.29.240.254'] });
      expect(config.rateLimits.store).toBe('postgres');
      // /metrics only on its own port, which HAProxy (port 1280 only) never forwards to.
      expect(config.listeners.map((l) => [l.name, l.interfaces, l.apis.has('metrics')])).toEqual([
        ['default', ['0.0.0.0:1280'], false],
        ['metrics', ['0.0.0.0:9090'], true],
      ]);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('HAProxy passes TLS through, round robin, with PROXY v2 to each replica', () => {
    expect(haproxyCfg).toMatch(/^\s*mode tcp$/m);
    expect(haproxyCfg).toMatch(/^\s*balance roundrobin$/m);
    expect(haproxyCfg).toMatch(/^\s*default-server send-proxy-v2 check check-send-proxy\b/m);
    expect(haproxyCfg).toMatch(/^\s*bind :1280$/m);
    const servers = [...haproxyCfg.matchAll(/^\s*server (\S+) (\S+):1280$/gm)].map((m) => [m[1], m[2]]);
    expect(servers).toEqual([
      ['controller-a', 'controller-a'],
      ['controller-b', 'controller-b'],
    ]);
    expect(haproxyCfg).not.toMatch(/mode http|ssl crt/);
  });

  /**
   * Connections go to a replica only while its /health/ready answers 200, asked over TLS after
   * the PROXY header the replicas require: a TCP check passes as soon as the port is bound, while
   * the replica still answers 503 (test/replicated/haproxy.test.ts shows the difference).
   */
  const expectReadinessCheck = (cfg: string) => {
    expect(cfg).toMatch(/^\s*option httpchk$/m);
    expect(cfg).toMatch(/^\s*http-check send meth GET uri \/health\/ready ver HTTP\/1\.1 hdr Host \S+$/m);
    expect(cfg).toMatch(/^\s*http-check expect status 200$/m);
    expect(cfg).toMatch(/^\s*default-server send-proxy-v2 check check-send-proxy check-ssl\b/m);
  };

  test('HAProxy sends connections to a replica only while it is ready', () => {
    expectReadinessCheck(haproxyCfg);
  });

  test('the HAProxy configuration in docs/operations.md checks readiness the same way', () => {
    const snippet = /```haproxy\n([\s\S]*?)```/.exec(read('docs/operations.md'))?.[1];
    expect(snippet).toBeDefined();
    expectReadinessCheck(snippet!);
  });
});

describe('Dockerfile', () => {
  const stages = dockerfile.split('\n').filter((l) => l.startsWith('FROM '));

  test('builds and runs on node 24 in two stages', () => {
    expect(stages).toHaveLength(2);
    for (const s of stages) expect(s).toMatch(/^FROM node:24-bookworm-slim\b/);
    expect(dockerfile).toMatch(/RUN npm ci\b/);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });

  test('runs as the non-root user node with its data in a volume', () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).not.toMatch(/^USER root$/m);
    expect(runtime).toMatch(/chown node:node \/var\/lib\/svc/);
    expect(runtime).toMatch(/^VOLUME \/var\/lib\/svc$/m);
    expect(runtime).toMatch(/^EXPOSE 1280$/m);
    expect(runtime).toMatch(/SVC_ADDRESS=0\.0\.0\.0:1280/);
    expect(runtime).toMatch(/SVC_DATA_DIR=\/var\/lib\/svc/);
    expect(runtime).toMatch(/NODE_ENV=production/);
    // The controller itself, with its heap options (test/foundation/heap-options.test.ts).
    expect(runtime).toMatch(/^CMD \["node", ("--[a-z-]+=\d+", )+"dist\/src\/main\.js"\]$/m);
  });

  test('has a HEALTHCHECK', () => {
    expect(dockerfileHealthcheck()[0]).toBe('node');
  });

  test('.dockerignore keeps local state and secrets out of the image', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'data', '.git', 'coverage', '.env']) {
      expect(ignored).toContain(entry);
    }
  });
});

describe('.env.example and config.example.yaml', () => {
  test('.env.example documents every named variable', () => {
    const missing = SECTION_1_VARIABLES.filter((name) => !documented.has(name));
    expect(missing).toEqual([]);
  });

  // Each check loads from an empty temp dir, so a developer's own .env plays no part.
  const withEmptyCwd = <T>(fn: (cwd: string) => T): T => {
    const cwd = mkdtempSync(join(tmpdir(), 'svc-delivery-'));
    try {
      return fn(cwd);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  };

  test('the defaults written in .env.example are the real defaults', () => {
    const defaults = Object.fromEntries([...documented].filter(([, value]) => value !== ''));
    expect(Object.keys(defaults).length).toBeGreaterThan(15);
    withEmptyCwd((cwd) => {
      expect(loadConfig({ env: defaults, cwd })).toEqual(loadConfig({ env: {}, cwd }));
    });
  });

  test('config.example.yaml is valid and loads', () => {
    withEmptyCwd((cwd) => {
      const config = loadConfig({ env: { SVC_CONFIG: join(root, 'config.example.yaml') }, cwd });
      expect(config.edge?.oidc.maxSessionDuration).toBe(720 * 3600);
      expect(config.listeners.map((l) => l.name)).toEqual(['client-management', 'oidc-only']);
    });
  });
});
