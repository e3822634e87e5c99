import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, envNameOf, loadConfig } from './load-config.js';

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const load = (env: Record<string, string>, files: Record<string, string> = {}) =>
  loadConfig({ env, cwd: dirWith(files) });

describe('configuration sources', () => {
  test('defaults apply when nothing is set', () => {
    const c = load({});
    expect(c.address).toBe('127.0.0.1:1280');
    expect(c.dataDir).toBe('./data');
    expect(c.edge?.api.sessionTimeout).toBe(1800);
    expect(c.edge?.oidc).toMatchObject({
      accessTokenDuration: 1800,
      idTokenDuration: 1800,
      refreshTokenDuration: 86400,
      maxSessionDuration: 720 * 3600,
      keyRotationGrace: 600,
    });
    expect(c.edge?.enrollment.duration).toBe(180 * 60);
    expect(c.rateLimits).toEqual({
      enabled: true,
      store: 'memory',
      perSecond: 20,
      burst: 200,
      authorizationPerSecond: 10,
      authorizationBurst: 100,
      introspectionPerSecond: 100,
      introspectionBurst: 1000,
    });
    expect(c.warnings).toEqual([]);
  });

  test('precedence is defaults, then YAML, then .env, then the environment', () => {
    const yaml =
      'edge:\n  api: { sessionTimeout: 10m }\n  oidc: { accessTokenDuration: 20m, idTokenDuration: 5m }\nrateLimits: { burst: 50 }\n';
    const files = {
      'svc.yaml': yaml,
      '.env': 'SVC_OIDC_ACCESS_TOKEN_DURATION=15m\nSVC_RATE_LIMITS_BURST=60\n',
    };
    const c = load({ SVC_CONFIG: 'svc.yaml', SVC_RATE_LIMITS_BURST: '70' }, files);
    expect(c.edge?.api.sessionTimeout).toBe(600); // YAML over default
    expect(c.edge?.oidc.idTokenDuration).toBe(300); // YAML
    expect(c.edge?.oidc.accessTokenDuration).toBe(900); // .env over YAML
    expect(c.rateLimits.burst).toBe(70); // environment over .env
  });

  test('every scalar setting has an SVC_ name derived from its YAML path', () => {
    expect(envNameOf('edge.api.sessionTimeout')).toBe('SVC_EDGE_API_SESSION_TIMEOUT');
    expect(envNameOf('edge.api.disableOidcAutoBinding')).toBe('SVC_EDGE_API_DISABLE_OIDC_AUTO_BINDING');
    const c = load({
      SVC_EDGE_API_SESSION_TIMEOUT: '90s',
      SVC_EDGE_API_DISABLE_OIDC_AUTO_BINDING: 'true',
      SVC_EDGE_OIDC_MAX_SESSION_DURATION: '48h',
      SVC_EDGE_TOTP_ISSUER: 'Acme',
      SVC_EDGE_ENROLLMENT_DURATION: '1h',
      SVC_RATE_LIMITS_ENABLED: 'false',
      SVC_DATABASE_POOL_MAX: '3',
    });
    expect(c.edge?.api).toEqual({ sessionTimeout: 90, disableOidcAutoBinding: true });
    expect(c.edge?.oidc.maxSessionDuration).toBe(48 * 3600);
    expect(c.edge?.totp.issuer).toBe('Acme');
    expect(c.edge?.enrollment.duration).toBe(3600);
    expect(c.rateLimits.enabled).toBe(false);
    expect(c.database.poolMax).toBe(3);
  });

  test('the named variables (DATABASE_URL, LOG_LEVEL, SVC_ADDRESS, …) are read', () => {
    const c = load({
      DATABASE_URL: 'postgres://u@h/db',
      SVC_DATA_DIR: '/var/lib/svc',
      SVC_ADVERTISED_ADDRESS: 'ctrl.example.com:443',
      SVC_OIDC_REDIRECT_URIS: 'https://a.example/cb, https://b.example/cb',
      SVC_CORS_ORIGINS: 'https://app.example',
      LOG_LEVEL: 'debug',
    });
    expect(c.databaseUrl).toBe('postgres://u@h/db');
    expect(c.dataDir).toBe('/var/lib/svc');
    expect(c.edge?.oidc.redirectURIs).toEqual(['https://a.example/cb', 'https://b.example/cb']);
    expect(c.corsOrigins).toEqual(['https://app.example']);
    expect(c.logLevel).toBe('debug');
    expect(c.listeners[0]!.addresses).toEqual(['ctrl.example.com:443']);
  });
});

describe('token duration rules', () => {
  test('durations under one minute are raised to one minute with a warning', () => {
    const c = load({ SVC_OIDC_ACCESS_TOKEN_DURATION: '30s', SVC_OIDC_ID_TOKEN_DURATION: '10s' });
    expect(c.edge?.oidc.accessTokenDuration).toBe(60);
    expect(c.edge?.oidc.idTokenDuration).toBe(60);
    expect(c.warnings).toEqual([
      'edge.oidc.accessTokenDuration 30s raised to 1m: minimum is 1m',
      'edge.oidc.idTokenDuration 10s raised to 1m: minimum is 1m',
    ]);
  });

  test('a refresh duration not at least 1m longer than the access duration is raised to access + 1m', () => {
    const c = load({ SVC_OIDC_ACCESS_TOKEN_DURATION: '2h', SVC_OIDC_REFRESH_TOKEN_DURATION: '2h30s' });
    expect(c.edge?.oidc.refreshTokenDuration).toBe(2 * 3600 + 60);
    expect(c.warnings).toEqual([
      'edge.oidc.refreshTokenDuration 2h30s raised to 2h1m: must be at least 1m longer than accessTokenDuration',
    ]);
  });

  test('exactly one minute longer is accepted as is', () => {
    const c = load({ SVC_OIDC_ACCESS_TOKEN_DURATION: '1m', SVC_OIDC_REFRESH_TOKEN_DURATION: '2m' });
    expect(c.edge?.oidc.refreshTokenDuration).toBe(120);
    expect(c.warnings).toEqual([]);
  });

  test('the refresh rule uses the already raised access duration', () => {
    const c = load({ SVC_OIDC_ACCESS_TOKEN_DURATION: '5s', SVC_OIDC_REFRESH_TOKEN_DURATION: '90s' });
    expect(c.edge?.oidc.accessTokenDuration).toBe(60);
    expect(c.edge?.oidc.refreshTokenDuration).toBe(120);
  });
});

describe('bad values stop the start with one line naming the key', () => {
  const message = (env: Record<string, string>, files?: Record<string, string>) => {
    try {
      load(env, files);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('expected a ConfigError');
  };

  test('an unparseable duration names its key and variable', () => {
    expect(message({ SVC_OIDC_ACCESS_TOKEN_DURATION: 'soon' })).toBe(
      'invalid configuration: edge.oidc.accessTokenDuration (SVC_OIDC_ACCESS_TOKEN_DURATION): "soon" is not a duration (e.g. 90s, 30m, 24h)',
    );
  });

  test('a non-boolean, a bad number, a bad address and a short master key are refused', () => {
    expect(message({ SVC_RATE_LIMITS_ENABLED: 'maybe' })).toMatch(
      /^invalid configuration: rateLimits\.enabled \(SVC_RATE_LIMITS_ENABLED\)/,
    );
    expect(message({ SVC_RATE_LIMITS_BURST: 'lots' })).toMatch(/^invalid configuration: rateLimits\.burst/);
    expect(message({ SVC_ADDRESS: 'nowhere' })).toMatch(
      /^invalid configuration: address \(SVC_ADDRESS\): must be host:port/,
    );
    expect(message({ SVC_MASTER_KEY: 'c2hvcnQ=' })).toMatch(/^invalid configuration: masterKey/);
  });

  test('webauthn.origins: only https://host[:port] under webauthn.rpId', () => {
    const rp = { SVC_WEBAUTHN_RP_ID: 'example.com' };
    expect(message({ ...rp, SVC_WEBAUTHN_ORIGINS: 'https://evil.org' })).toBe(
      'invalid configuration: webauthn.origins (SVC_WEBAUTHN_ORIGINS): https://evil.org is not example.com or under it (webauthn.rpId)',
    );
    expect(message({ ...rp, SVC_WEBAUTHN_ORIGINS: 'http://example.com' })).toMatch(
      /^invalid configuration: webauthn\.origins\.0 \(SVC_WEBAUTHN_ORIGINS\): http:\/\/example\.com must start with https:\/\//,
    );
    expect(message({ ...rp, SVC_WEBAUTHN_ORIGINS: 'not a url' })).toMatch(
      /^invalid configuration: webauthn\.origins\.0 .*"not a url" is not a URL/,
    );
    for (const bad of [
      'https://example.com/login',
      'https://example.com/',
      'https://u:p@example.com',
      'https://example.com?x=1',
    ]) {
      expect(message({ ...rp, SVC_WEBAUTHN_ORIGINS: `https://login.example.com,${bad}` })).toMatch(
        /^invalid configuration: webauthn\.origins\.1 \(SVC_WEBAUTHN_ORIGINS\): /,
      );
    }
    expect(
      load({ ...rp, SVC_WEBAUTHN_ORIGINS: 'https://example.com,https://login.example.com:1280' }).webauthn
        .origins,
    ).toEqual(['https://example.com', 'https://login.example.com:1280']);
  });

  test('tls.ciphers: unknown names, TLS 1.3 names and an empty list are refused naming the key', () => {
    expect(message({ SVC_TLS_CIPHERS: 'ECDHE-ECDSA-AES128-GCM-SHA256:NO-SUCH-SUITE' })).toBe(
      'invalid configuration: tls.ciphers.1 (SVC_TLS_CIPHERS): NO-SUCH-SUITE is not a cipher suite name this OpenSSL knows',
    );
    expect(message({ SVC_TLS_CIPHERS: 'TLS_AES_128_GCM_SHA256' })).toMatch(
      /^invalid configuration: tls\.ciphers\.0 \(SVC_TLS_CIPHERS\): TLS_AES_128_GCM_SHA256: TLS 1\.3 suites are not configurable/,
    );
    expect(message({ SVC_TLS_CIPHERS: ':' })).toMatch(/^invalid configuration: tls\.ciphers/);
  });

  test('tls.ciphers: a warning names only the suites beyond the default', () => {
    const narrowed = load({ SVC_TLS_CIPHERS: 'ecdhe-ecdsa-aes256-gcm-sha384' });
    const yaml = 'tls:\n  ciphers: [ECDHE-ECDSA-AES128-GCM-SHA256, ECDHE-RSA-AES256-SHA]\n';
    const widened = load({ SVC_CONFIG: 'c.yaml' }, { 'c.yaml': yaml });

    expect(narrowed.tls.ciphers).toEqual(['ECDHE-ECDSA-AES256-GCM-SHA384']);
    expect(narrowed.warnings).toEqual([]);
    expect(load({}).tls.ciphers).toBeUndefined();
    expect(widened.warnings).toEqual([
      'tls.ciphers offers TLS 1.2 suites beyond the default: ECDHE-RSA-AES256-SHA',
    ]);
  });

  test('broken YAML names the file and stays on one line', () => {
    const m = message({ SVC_CONFIG: 'bad.yaml' }, { 'bad.yaml': 'edge: [unclosed\n' });
    expect(m).toMatch(/^invalid configuration: .*bad\.yaml: /);
    expect(m).not.toContain('\n');
  });

  test('a YAML value of the wrong type names its path', () => {
    const m = message({ SVC_CONFIG: 'c.yaml' }, { 'c.yaml': 'edge:\n  oidc:\n    idTokenDuration: [1]\n' });
    expect(m).toMatch(/^invalid configuration: edge\.oidc\.idTokenDuration: /);
  });

  test('a missing YAML file is reported', () => {
    expect(message({ SVC_CONFIG: 'missing.yaml' })).toMatch(
      /SVC_CONFIG: cannot read .*missing\.yaml \(ENOENT\)/,
    );
  });
});
