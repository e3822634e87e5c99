import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { parse as parseYaml } from 'yaml';
import { readCertificatesFile } from './certificates-file.js';
import { configSchema, type ParsedConfig } from './config-schema.js';
import { applyTokenDurationRules } from './token-durations.js';
import { widenedCiphers } from './tls-ciphers.js';
import { hostWithin } from './webauthn-origin.js';
import { resolveListeners, type ListenerSpec } from './web-listeners.js';

export type Config = ParsedConfig & {
  listeners: ListenerSpec[];
  warnings: string[];
  /** `caPem`: the certificates of the webhooks.ca file, read at start. */
  webhooks: ParsedConfig['webhooks'] & { caPem?: string };
};

export class ConfigError extends Error {
  constructor(message: string) {
    super(`invalid configuration: ${message}`);
    this.name = 'ConfigError';
  }
}

/** Variables (docs/operations.md) whose names do not follow the `SVC_` + path rule. */
const NAMED_VARIABLES: Record<string, string> = {
  DATABASE_URL: 'databaseUrl',
  LOG_LEVEL: 'logLevel',
  SVC_DATA_DIR: 'dataDir',
  SVC_ADDRESS: 'address',
  SVC_ADVERTISED_ADDRESS: 'advertisedAddress',
  SVC_ADMIN_USERNAME: 'admin.username',
  SVC_ADMIN_PASSWORD: 'admin.password',
  SVC_MASTER_KEY: 'masterKey',
  SVC_CORS_ORIGINS: 'corsOrigins',
  SVC_OIDC_ACCESS_TOKEN_DURATION: 'edge.oidc.accessTokenDuration',
  SVC_OIDC_ID_TOKEN_DURATION: 'edge.oidc.idTokenDuration',
  SVC_OIDC_REFRESH_TOKEN_DURATION: 'edge.oidc.refreshTokenDuration',
  SVC_OIDC_REDIRECT_URIS: 'edge.oidc.redirectURIs',
  SVC_OIDC_POST_LOGOUT_URIS: 'edge.oidc.postLogoutURIs',
};

/** Every other scalar setting: `SVC_` + its YAML path in upper snake case. */
const SCALAR_PATHS = [
  'database.poolMax',
  'proxyProtocol.trustedFrom',
  'database.statementTimeout',
  'database.acquireTimeout',
  'database.changeFeed',
  'database.instanceLock',
  'edge.api.sessionTimeout',
  'edge.api.disableOidcAutoBinding',
  'edge.oidc.accessTokenDuration',
  'edge.oidc.idTokenDuration',
  'edge.oidc.refreshTokenDuration',
  'edge.oidc.maxSessionDuration',
  'edge.oidc.keyRotationGrace',
  'edge.enrollment.duration',
  'edge.totp.issuer',
  'rateLimits.enabled',
  'rateLimits.store',
  'rateLimits.perSecond',
  'rateLimits.burst',
  'rateLimits.authorizationPerSecond',
  'rateLimits.authorizationBurst',
  'rateLimits.introspectionPerSecond',
  'rateLimits.introspectionBurst',
  'metrics.enabled',
  'metrics.address',
  'server.responseDeadline',
  'server.tlsHandshakeTimeout',
  'server.shutdownGracePeriod',
  'tls.cert',
  'tls.key',
  'tls.ca',
  'tls.ciphers',
  'pki.signingCert',
  'pki.signingKey',
  'pki.trustDomain',
  'webauthn.rpId',
  'webauthn.origins',
  'webhooks.allowPrivateTargets',
  'webhooks.ca',
  'audit.retention',
];

export const envNameOf = (path: string) =>
  'SVC_' +
  path
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/\./g, '_')
    .toUpperCase();

const ENV_TO_PATH: Record<string, string> = {
  ...Object.fromEntries(SCALAR_PATHS.map((p) => [envNameOf(p), p])),
  ...NAMED_VARIABLES,
};

/** Every variable that sets `path`, the named one (the documented spelling) first. */
export function variablesOf(path: string): string[] {
  const named = Object.keys(NAMED_VARIABLES).filter((name) => NAMED_VARIABLES[name] === path);
  const scalar = SCALAR_PATHS.includes(path) ? [envNameOf(path)] : [];
  return [...new Set([...named, ...scalar])];
}

type Tree = Record<string, unknown>;

function setPath(tree: Tree, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = tree;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node[key] = next && typeof next === 'object' && !Array.isArray(next) ? next : {};
    node = node[key] as Tree;
  }
  node[keys.at(-1)!] = value;
}

function readYaml(file: string): Tree {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`SVC_CONFIG: cannot read ${file} (${(err as NodeJS.ErrnoException).code})`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`${file}: the top level must be a mapping`);
  return doc as Tree;
}

export interface LoadConfigOptions {
  /** The real environment; tests pass their own. */
  env?: Record<string, string | undefined>;
  /** Where `.env` is looked for. */
  cwd?: string;
  /** Settings layered over everything (tests). */
  overrides?: (tree: Tree) => void;
}

/**
 * One validated config object from defaults ← YAML (`SVC_CONFIG`) ← `.env` ← environment
 * (later wins). Throws ConfigError naming the key of the first bad value.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const realEnv = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const dotenvFile = resolve(cwd, '.env');
  const dotenv = existsSync(dotenvFile) ? parseDotenv(readFileSync(dotenvFile)) : {};
  const env: Record<string, string | undefined> = { ...dotenv, ...realEnv };

  const yamlFile = env.SVC_CONFIG;
  const tree: Tree = yamlFile ? readYaml(resolve(cwd, yamlFile)) : { edge: {} };
  // OIDC and the edge APIs exist only when the edge section is present (docs/operations.md).
  const hasEdge = 'edge' in tree && tree.edge !== null;
  if (hasEdge && typeof tree.edge !== 'object') tree.edge = {};
  if (!hasEdge) delete tree.edge;

  const sourceOf = new Map<string, string>();
  for (const [name, path] of Object.entries(ENV_TO_PATH)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (path.startsWith('edge.') && !hasEdge) continue;
    setPath(tree, path, value);
    sourceOf.set(path, name);
  }
  options.overrides?.(tree);
  return validate(tree, sourceOf, cwd);
}

function validate(tree: Tree, sourceOf: Map<string, string>, cwd: string): Config {
  const result = configSchema.safeParse(tree);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const path = issue.path.join('.');
    // A list item's issue (`corsOrigins.1`) names the variable of the whole list.
    const source = sourceOf.get(path) ?? sourceOf.get(issue.path.slice(0, -1).join('.'));
    throw new ConfigError(`${path || '(root)'}${source ? ` (${source})` : ''}: ${issue.message}`);
  }
  const parsed = result.data;
  if (parsed.masterKey !== undefined && Buffer.from(parsed.masterKey, 'base64').length !== 32) {
    throw new ConfigError('masterKey (SVC_MASTER_KEY): must be 32 bytes, base64-encoded');
  }
  if (Boolean(parsed.tls.cert) !== Boolean(parsed.tls.key)) {
    throw new ConfigError('tls.cert and tls.key: give both or neither');
  }
  if (Boolean(parsed.pki.signingCert) !== Boolean(parsed.pki.signingKey)) {
    throw new ConfigError('pki.signingCert and pki.signingKey: give both or neither');
  }
  checkInterfacesUnique(parsed.web ?? []);
  checkWebauthnOrigins(parsed);
  checkMetricsAddress(parsed);
  if (parsed.web && parsed.proxyProtocol.trustedFrom.length > 0) {
    // Ignoring it would leave the listeners without the trust the operator meant to set.
    throw new ConfigError(
      'proxyProtocol.trustedFrom applies to the default listener only; with a web section set it on each listener',
    );
  }
  const warnings: string[] = [];
  if (parsed.metrics.address && !parsed.metrics.enabled)
    warnings.push('metrics.address is set but metrics.enabled is false: no metrics listener is started');
  const widened = widenedCiphers(parsed.tls.ciphers ?? []);
  if (widened.length > 0)
    warnings.push(`tls.ciphers offers TLS 1.2 suites beyond the default: ${widened.join(':')}`);
  if (parsed.edge) {
    const { durations, warnings: w } = applyTokenDurationRules(parsed.edge.oidc);
    Object.assign(parsed.edge.oidc, durations);
    warnings.push(...w);
  }
  const webhooks = { ...parsed.webhooks, caPem: webhooksCaPem(parsed.webhooks.ca, sourceOf, cwd) };
  return { ...parsed, listeners: resolveListeners(parsed), warnings, webhooks };
}

/** webhooks.ca read now, so that a missing or wrong file stops the start instead of every delivery. */
function webhooksCaPem(file: string | undefined, sourceOf: Map<string, string>, cwd: string) {
  if (file === undefined) return undefined;
  try {
    return readCertificatesFile(resolve(cwd, file));
  } catch (err) {
    const source = sourceOf.get('webhooks.ca');
    throw new ConfigError(`webhooks.ca${source ? ` (${source})` : ''}: ${(err as Error).message}`);
  }
}

/**
 * A configured origin outside the configured rpId would fail every ceremony there (browsers
 * refuse it). Without webauthn.rpId the id is derived from the bind points at start, where
 * createWebauthnSettings applies the same rule.
 */
function checkWebauthnOrigins(parsed: ParsedConfig): void {
  const rpId = parsed.webauthn.rpId?.toLowerCase();
  if (!rpId) return;
  for (const origin of parsed.webauthn.origins ?? []) {
    const host = new URL(origin).hostname;
    if (!hostWithin(host, rpId))
      throw new ConfigError(
        `webauthn.origins (SVC_WEBAUTHN_ORIGINS): ${origin} is not ${rpId} or under it (webauthn.rpId)`,
      );
  }
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Whether binding both would fail: one port, and hosts that are the same or overlap. */
function interfacesClash(a: string, b: string): boolean {
  const split = (hp: string) => [hp.slice(0, hp.lastIndexOf(':')), hp.slice(hp.lastIndexOf(':') + 1)];
  const [hostA, portA] = split(a);
  const [hostB, portB] = split(b);
  // Port 0 (tests) binds a free port each time, so it never collides.
  if (portA !== portB || portA === '0') return false;
  if (hostA === hostB || WILDCARD_HOSTS.has(hostA!) || WILDCARD_HOSTS.has(hostB!)) return true;
  return LOOPBACK_HOSTS.has(hostA!) && LOOPBACK_HOSTS.has(hostB!);
}

/**
 * `metrics.address` adds a listener named `metrics`: refused when its address would clash with
 * another listener's interface at bind time (found now, not after the start has begun) or when a
 * listener of the `web` section already has that name.
 */
function checkMetricsAddress(parsed: ParsedConfig): void {
  const address = parsed.metrics.address;
  if (!address || !parsed.metrics.enabled) return;
  const listeners = parsed.web ?? [{ name: 'default', bindPoints: [{ interface: parsed.address }] }];
  const source = 'metrics.address (SVC_METRICS_ADDRESS)';
  if (listeners.some((l) => l.name === 'metrics'))
    throw new ConfigError(
      `${source}: a web listener is already named metrics; list the metrics binding on it instead`,
    );
  for (const l of listeners) {
    const taken = l.bindPoints.find((b) => interfacesClash(b.interface, address));
    if (taken)
      throw new ConfigError(`${source}: ${address} clashes with listener ${l.name}'s ${taken.interface}`);
  }
}

function checkInterfacesUnique(web: NonNullable<ParsedConfig['web']>): void {
  const owner = new Map<string, string>();
  for (const listener of web) {
    for (const iface of new Set(listener.bindPoints.map((b) => b.interface))) {
      const other = owner.get(iface);
      if (other)
        throw new ConfigError(`web: interface ${iface} is used by listeners ${other} and ${listener.name}`);
      owner.set(iface, listener.name);
    }
  }
}
