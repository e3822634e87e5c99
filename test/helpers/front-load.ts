import * as oc from 'openid-client';
import { via, whoAmI } from './upgrade-flows.js';
import type { UpgradePair } from './upgrade-pair.js';
import { waitFor } from './wait-for.js';

const MGMT = '/edge/management/v1';

export interface FrontLoadOutcome {
  /** Requests sent through the front and answered (or failed). */
  requests: number;
  refreshes: number;
  /** Identities whose creation was answered 201. */
  created: string[];
  /** Every request that was not answered as it must be, with what happened. */
  failures: string[];
}

export interface FrontLoad {
  /** Resolves once `more` further requests have been answered. */
  answered(more: number): Promise<void>;
  stop(): Promise<FrontLoadOutcome>;
}

/**
 * Three clients through the front, each request on a connection of its own, until stopped: an
 * admin creating identities and reading each back, a refresh token chain whose every access token
 * is used at once, and an API session in use. Any answer but the expected one is a failure; a
 * broken refresh chain ends its client.
 */
export function startFrontLoad(
  pair: UpgradePair,
  admin: Record<string, string>,
  grant: { config: oc.Configuration; refreshToken: string; session: string },
): FrontLoad {
  const client = pair.viaFront();
  const outcome: FrontLoadOutcome = { requests: 0, refreshes: 0, created: [], failures: [] };
  let stopped = false;
  const check = async <T>(
    what: string,
    call: () => Promise<T>,
    ok: (value: T) => boolean,
    show: (value: T) => string,
  ) => {
    try {
      const value = await call();
      if (!ok(value)) outcome.failures.push(`${what}: ${show(value)}`);
      return ok(value) ? value : undefined;
    } catch (err) {
      outcome.failures.push(`${what}: ${(err as Error).message}`);
      return undefined;
    } finally {
      outcome.requests++;
    }
  };

  const writes = async () => {
    for (let n = 0; !stopped; n++) {
      const name = `upgrade-load-${n}`;
      const created = await check(
        `creating ${name}`,
        () => client.post(`${MGMT}/identities`, { headers: admin, body: { name, isAdmin: false } }),
        (r) => r.status === 201,
        (r) => `${r.status} ${r.text}`,
      );
      if (!created) continue;
      const id = created.body.data.id as string;
      outcome.created.push(id);
      await check(
        `reading ${name}`,
        () => client.get(`${MGMT}/identities/${id}`, { headers: admin }),
        (r) => r.status === 200 && r.body.data.name === name,
        (r) => `${r.status} ${r.text}`,
      );
    }
  };
  const grants = async () => {
    const config = via(grant.config, { client, oidcFetch: pair.frontFetch });
    let refreshToken = grant.refreshToken;
    while (!stopped) {
      const tokens = await check(
        'a refresh',
        () => oc.refreshTokenGrant(config, refreshToken),
        () => true,
        () => '',
      );
      if (!tokens) return;
      outcome.refreshes++;
      refreshToken = tokens.refresh_token!;
      await check(
        'the refreshed access token',
        () => whoAmI(client, { bearer: tokens.access_token }),
        (r) => r.status === 200,
        (r) => String(r.status),
      );
    }
  };
  const sessions = async () => {
    while (!stopped) {
      await check(
        'the API session',
        () => whoAmI(client, { session: grant.session }),
        (r) => r.status === 200,
        (r) => String(r.status),
      );
    }
  };
  const running = Promise.all([writes(), grants(), sessions()]);

  return {
    answered(more) {
      const target = outcome.requests + more;
      return waitFor(() => outcome.requests >= target, {
        what: `${more} more answers through the front`,
        timeout: 60_000,
      }).then(() => undefined);
    },
    async stop() {
      stopped = true;
      await running;
      return outcome;
    },
  };
}
