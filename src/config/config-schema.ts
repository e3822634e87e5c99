import { z } from 'zod';
import { parseDuration } from './duration.js';

/** A duration setting (`90s`, `30m`, `24h`) parsed to whole seconds. */
const duration = (fallback: string) =>
  z
    .union([z.string(), z.number()])
    .default(fallback)
    .transform((v, ctx) => {
      const seconds = parseDuration(v);
      if (seconds === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(v)} is not a duration (e.g. 90s, 30m, 24h)`,
        });
        return z.NEVER;
      }
      return seconds;
    });

/** Booleans also come from env strings. */
const bool = (fallback: boolean) =>
  z.preprocess((v) => {
    if (typeof v !== 'string') return v;
    const s = v.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(s)) return true;
    if (['false', '0', 'no', 'off', ''].includes(s)) return false;
    return v;
  }, z.boolean().default(fallback));

const int = (fallback: number, min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v),
    z.number().int().min(min).max(max).default(fallback),
  );

/** A comma-separated env list or a YAML list. */
const stringList = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : v,
  z.array(z.string().min(1)),
);

/** `host:port`; IPv6 hosts in brackets. */
export const hostPort = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port')
  .refine((s) => Number(s.slice(s.lastIndexOf(':') + 1)) <= 65535, 'port must be at most 65535');

const apiBinding = z.object({
  binding: z.enum(['edge-client', 'edge-management', 'edge-oidc', 'health', 'metrics']),
  options: z
    .object({ redirectURIs: stringList.optional(), postLogoutURIs: stringList.optional() })
    .strict()
    .optional(),
});

const webListener = z.object({
  name: z.string().min(1),
  bindPoints: z.array(z.object({ interface: hostPort, address: hostPort.optional() })).min(1),
  apis: z.array(apiBinding).min(1),
});

export const edgeSchema = z.object({
  api: z.object({ sessionTimeout: duration('30m'), disableOidcAutoBinding: bool(false) }).prefault({}),
  oidc: z
    .object({
      accessTokenDuration: duration('30m'),
      idTokenDuration: duration('30m'),
      refreshTokenDuration: duration('24h'),
      maxSessionDuration: duration('720h'),
      keyRotationGrace: duration('10m'),
      redirectURIs: stringList.optional(),
      postLogoutURIs: stringList.optional(),
    })
    .prefault({}),
  enrollment: z.object({ duration: duration('180m') }).prefault({}),
  totp: z.object({ issuer: z.string().min(1).default('svc') }).prefault({}),
});

export const configSchema = z.object({
  dataDir: z.string().min(1).default('./data'),
  databaseUrl: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  database: z.object({ poolMax: int(10, 1, 200) }).prefault({}),
  address: hostPort.default('127.0.0.1:1280'),
  advertisedAddress: hostPort.optional(),
  admin: z
    .object({ username: z.string().min(1).default('admin'), password: z.string().min(1).optional() })
    .prefault({}),
  masterKey: z.string().optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  corsOrigins: stringList.default([]),
  tls: z
    .object({ cert: z.string().optional(), key: z.string().optional(), ca: z.string().optional() })
    .prefault({}),
  pki: z
    .object({
      signingCert: z.string().optional(),
      signingKey: z.string().optional(),
      trustDomain: z.string().min(1).default('svc'),
    })
    .prefault({}),
  edge: edgeSchema.optional(),
  rateLimits: z
    .object({
      enabled: bool(true),
      perSecond: int(20, 1, 1_000_000),
      burst: int(200, 1, 10_000_000),
      // GET /oidc/authorization stores an auth request per call, so it has a budget of its own.
      authorizationPerSecond: int(10, 1, 1_000_000),
      authorizationBurst: int(100, 1, 10_000_000),
    })
    .prefault({}),
  metrics: z.object({ enabled: bool(true) }).prefault({}),
  web: z.array(webListener).min(1).optional(),
});

export type RawConfig = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;
export type WebListenerConfig = z.output<typeof webListener>;
export type ApiBindingName = z.output<typeof apiBinding>['binding'];
