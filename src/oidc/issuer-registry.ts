import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { ListenerSpec } from '../config/web-listeners.js';
import type { KeySet } from '../services/keys/key-service.js';
import { OIDC_MOUNT } from './login-paths.js';
import type { ResumeTarget } from './resume-in-process.js';

/** One bind-point address serving OIDC: its issuer and URI patterns. */
export interface IssuerSpec {
  /** `host:port` as configured (ports already resolved). */
  address: string;
  redirectUris: string[];
  postLogoutUris: string[];
  /** The account page's callback at this address, when its listener serves the page. */
  accountCallback?: string;
}

export interface IssuerEntry extends ResumeTarget {
  address: string;
  issuer: string;
  provider: Provider;
  redirectUriAllowed: (uri: string) => boolean;
  postLogoutUriAllowed: (uri: string) => boolean;
}

/** The listener a request arrived on, as `buildKoaApp` puts it on `ctx.state.listener`. */
export type ListenerAddresses = Pick<ListenerSpec, 'addresses'>;

export type ProviderBuilder = (spec: IssuerSpec, issuer: string, keys: KeySet) => IssuerEntry;

export const issuerOf = (address: string) => `https://${address}${OIDC_MOUNT}`;

/** A Host header as `host:port`, lowercase; no port means 443 (we only speak HTTPS). */
export function normaliseHost(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const h = host.trim().toLowerCase();
  if (/^\[[0-9a-f:.]+\]:\d+$/.test(h) || /^[a-z0-9.-]+:\d+$/.test(h)) return h;
  if (/^\[[0-9a-f:.]+\]$/.test(h) || /^[a-z0-9.-]+$/.test(h)) return `${h}:443`;
  return undefined;
}

/**
 * Providers by address. A key change rebuilds all of them and swaps the whole map at once; a
 * request that already picked an entry finishes on it (oidc-provider reads keys only when built).
 */
export function createIssuerRegistry(specs: IssuerSpec[], build: ProviderBuilder) {
  let entries = new Map<string, IssuerEntry>();
  const issuerList = [...new Set(specs.map((s) => issuerOf(s.address)))];

  return {
    rebuild(keys: KeySet): void {
      const next = new Map<string, IssuerEntry>();
      for (const spec of specs) {
        const address = spec.address.toLowerCase();
        if (!next.has(address)) next.set(address, build(spec, issuerOf(spec.address), keys));
      }
      entries = next;
    },

    /**
     * The entry of an address bound to the listener that accepted the connection: never a raw Host
     * echoed into `iss`, nor another listener's issuer and redirect patterns reached through a
     * forged Host (docs/operations.md, YAML).
     */
    pick(listener: ListenerAddresses | undefined, host: string | undefined): IssuerEntry | undefined {
      const key = normaliseHost(host);
      if (key === undefined || !listener?.addresses.some((a) => a.toLowerCase() === key)) return undefined;
      return entries.get(key);
    },

    /** The same array on every call (read on every bearer request): callers must not change it. */
    issuers(): string[] {
      return issuerList;
    },

    entries(): IssuerEntry[] {
      return [...entries.values()];
    },
  };
}

export type IssuerRegistry = ReturnType<typeof createIssuerRegistry>;

export function providerCallback(
  provider: Provider,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return provider.callback() as unknown as (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}
