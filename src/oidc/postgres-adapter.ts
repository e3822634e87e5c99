import type { IncomingMessage } from 'node:http';
import type { Knex } from 'knex';
import Provider, { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { devicePollsRepository } from '../repositories/device-polls-repository.js';
import { loginRowsRepository } from '../repositories/login-rows-repository.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import {
  tokenWithGrantRepository,
  type GrantTokenModel,
} from '../repositories/token-with-grant-repository.js';
import type { CompletedLogins } from './completed-logins.js';
import type { GrantPrefetch } from './grant-prefetch.js';
import { loginRowsEnd } from './login-lifetime.js';
import { NO_AUDIT, type AuditTrail } from '../services/audit-trail.js';
import { currentRequestScope } from '../services/request-scope.js';
import {
  CODE_VERIFICATION_ROUTE,
  DEVICE_RESUME_ROUTE,
  POLL_INTERVAL_SECONDS,
  POLL_JITTER_SECONDS,
  SLOW_DOWN_STEP_SECONDS,
} from './device-flow.js';
import { EXPIRED_MARGIN_MS } from './oidc-janitor.js';
import { liveFacts } from './oidc-sessions.js';
import { openPayload, sealPayload } from './stored-payload.js';

export interface PostgresAdapterDeps {
  knex: Knex;
  /**
   * Runs (awaited, inside the provider's request) whenever a Grant is destroyed: a replayed
   * authorization code or refresh token, `/oidc/revoke`, grant revocation. JWT access tokens are
   * never stored, so this is where their API session is revoked.
   */
  onGrantDestroyed: (grantId: string) => Promise<void>;
  /**
   * When given, finding an authorization code or a refresh token inside a provider request reads
   * its grant, login facts, API session and identity in the same statement and keeps them for that
   * request.
   */
  prefetch?: GrantPrefetch;
  /**
   * The login step completing on this request has marked its interaction consumed, which `find`
   * treats as gone: the provider's in-process resume finds the interaction here instead, and its
   * destroy leaves the consumed row to the janitor. Without it no login completes.
   */
  completedLogins: Pick<CompletedLogins, 'interactionFor' | 'completedInteraction'>;
  /** edge.oidc.accessTokenDuration (s): how long a login's rows last at least once it has a token. */
  accessTokenSeconds: number;
  /**
   * Audit events a request holds (services/audit-trail.ts `hold`) join the write its login or token
   * request makes anyway: an auth request's progress, the consume of a refresh token.
   */
  audit?: Pick<AuditTrail, 'takeHeld'>;
  /** The provider request being served (oidc-provider keeps it in an AsyncLocalStorage). */
  requestContext?: () => object | undefined;
  now?: () => Date;
}

const isGrantToken = (model: string): model is GrantTokenModel =>
  model === 'AuthorizationCode' || model === 'RefreshToken';

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);

/** Expired device codes stay readable until the janitor's margin has passed (`expired_token`). */
const deviceCodesReadableAfter = (at: Date) => new Date(at.getTime() - EXPIRED_MARGIN_MS);

/**
 * A device code found by its user code (the person's side) is named by this prefix and the user
 * code instead of its own id, which is stored only as its hash (ADR 0004) and so cannot be given
 * back: the provider saves it, and finds it again after the login (the interaction keeps the
 * name), under this name. No id the provider generates contains a colon.
 */
const BY_USER_CODE = 'user-code:';
const PERSON_ROUTES = new Set([CODE_VERIFICATION_ROUTE, DEVICE_RESUME_ROUTE]);

/** A device code the person has neither confirmed nor declined yet, and that has not expired at `at`. */
const isPending = (payload: Record<string, unknown>, at: Date) =>
  !payload.accountId &&
  !payload.error &&
  !(typeof payload.exp === 'number' && payload.exp * 1000 <= at.getTime());

/** What the adapter reads of the provider's request: its route name and its issuer. */
type ProviderRequest = { req?: IncomingMessage; oidc?: { route?: string; issuer?: string } };

/**
 * A code or refresh token is redeemed only at the issuer its login went through (RFC 9700 §4.4):
 * elsewhere the token endpoint does not find it, so it answers `invalid_grant` and consumes nothing.
 * Other endpoints (revocation) find it at every issuer of the deployment. Logins stored without an
 * issuer are redeemed anywhere.
 */
function redeemableHere(ctx: object, facts: Record<string, unknown> | undefined): boolean {
  const oidc = (ctx as ProviderRequest).oidc;
  const issuer = facts?.issuer;
  return oidc?.route !== 'token' || typeof issuer !== 'string' || issuer === oidc.issuer;
}

/**
 * Every id, uid and user code the provider generates is short printable ASCII; client ids are
 * ours. Anything else came from a client (a code, token or client_id parameter) and names no row,
 * so it is not looked up at all. Ids reach SQL only as their hash, but a uid or user code is
 * looked up as it is, and PostgreSQL would refuse a NUL there with an error instead of a miss.
 */
const PLAUSIBLE_KEY = /^[\x21-\x7e]{1,512}$/;
const plausible = (key: unknown): key is string => typeof key === 'string' && PLAUSIBLE_KEY.test(key);

/**
 * oidc-provider's adapter over one table shared by every Provider. `consume` is one
 * statement whose conditional UPDATE fails the loser, so of N parallel redemptions exactly one wins. Every
 * model's id is stored only as its hash and never inside its payload (docs/adr/0004).
 */
export function createPostgresAdapter({
  knex,
  onGrantDestroyed,
  prefetch,
  completedLogins,
  accessTokenSeconds,
  audit = NO_AUDIT,
  requestContext = () => Provider.ctx,
  now = () => new Date(),
}: PostgresAdapterDeps) {
  const requestOf = () => (requestContext() as ProviderRequest | undefined)?.req;
  const routeOf = () => (requestContext() as ProviderRequest | undefined)?.oidc?.route;

  return class PostgresAdapter implements Adapter {
    constructor(private readonly model: string) {}

    /**
     * The provider's Session is stored only behind the device code form, for its XSRF secret;
     * elsewhere its cookie is stripped (oidc-dispatch.ts) and no code or token is bound to it
     * (`expiresWithSession`, create-provider.ts), so nothing would ever read it. A Grant is saved once, as its login
     * completes and before its code: it ends with that code until a token is issued
     * (login-lifetime.ts). A refresh token moves the end of its login's rows to its own.
     */
    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      // Only the device code form's session is kept, for its XSRF secret (ADR 0005).
      if (this.model === 'Session' && routeOf() !== CODE_VERIFICATION_ROUTE) return;
      if (this.model === 'Grant') prefetch?.forget(requestContext(), id);
      const at = now();
      const row = {
        model: this.model,
        id,
        payload: sealPayload(id, payload),
        grantId: payload.grantId,
        userCode: payload.userCode,
        uid: payload.uid,
        expiresAt: expiresIn ? new Date(at.getTime() + expiresIn * 1000) : null,
      };
      if (this.model === 'Grant') row.expiresAt = loginRowsEnd(at, { kind: 'login' });
      if (this.model === 'RefreshToken' && row.grantId && row.expiresAt) {
        const loginEnd = loginRowsEnd(at, { kind: 'refresh-token', expiresAt: row.expiresAt });
        return loginRowsRepository.upsertAndExtend(knex, { ...row, grantId: row.grantId }, loginEnd);
      }
      if (this.model === 'DeviceCode' && id.startsWith(BY_USER_CODE)) {
        // The person has signed in for a device: its login's rows wait for the device's next
        // poll until the device code expires, not just as long as an authorization code would.
        const loginEnd = new Date(
          Math.max(row.expiresAt?.getTime() ?? 0, loginRowsEnd(at, { kind: 'login' }).getTime()),
        );
        const accountId = typeof payload.accountId === 'string' ? payload.accountId : null;
        await devicePollsRepository.saveByUserCode(
          knex,
          id.slice(BY_USER_CODE.length),
          { payload: row.payload, grantId: row.grantId ?? null, accountId },
          loginEnd,
        );
        return;
      }
      if (this.model === 'Interaction') {
        // A login step that leaves factors owed: its decisions are stored with its progress.
        const held = audit.takeHeld();
        if (held.rows.length > 0) {
          await loginRowsRepository.upsertWithEvents(knex, row, held.rows);
          held.logged();
          return;
        }
      }
      await oidcPayloadsRepository.upsert(knex, row);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (!plausible(id)) return undefined;
      if (this.model === 'Interaction') {
        const completed = completedLogins.interactionFor(requestOf(), id);
        if (completed) return this.reply(id, { payload: completed, consumedAt: null });
      }
      if (this.model === 'DeviceCode') return this.findDeviceCode(id);
      const ctx = prefetch && requestContext();
      if (ctx && isGrantToken(this.model)) return this.findWithGrant(ctx, this.model, id);
      if (ctx && this.model === 'Grant') {
        const hit = prefetch!.get(ctx, id);
        if (hit) return this.reply(id, hit.grant);
      }
      const stored = await oidcPayloadsRepository.find(knex, this.model, id, now());
      // A completed login leaves its interaction consumed until it expires (login-flow.ts
      // `complete`): for the provider, and for any later step of that auth request, it is gone.
      if (this.model === 'Interaction' && stored?.consumedAt) return undefined;
      return this.reply(id, stored);
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (!plausible(uid)) return undefined;
      return this.reply(undefined, await oidcPayloadsRepository.findByUid(knex, this.model, uid, now()));
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (!plausible(userCode)) return undefined;
      if (this.model !== 'DeviceCode') {
        return this.reply(
          undefined,
          await oidcPayloadsRepository.findByUserCode(knex, this.model, userCode, now()),
        );
      }
      return this.reply(
        `${BY_USER_CODE}${userCode}`,
        await oidcPayloadsRepository.findByUserCode(
          knex,
          this.model,
          userCode,
          deviceCodesReadableAfter(now()),
        ),
      );
    }

    /** Redeeming a code or refresh token issues an access token: its login's rows last at least as long. */
    async consume(id: string): Promise<void> {
      const at = now();
      const loginEnd = loginRowsEnd(at, { kind: 'access-token', accessTokenSeconds });
      const held = isGrantToken(this.model) ? audit.takeHeld() : undefined;
      const consumed = held
        ? await loginRowsRepository.consumeAndExtend(knex, this.model, id, at, loginEnd, held.rows)
        : this.model === 'DeviceCode'
          ? await devicePollsRepository.consume(
              knex,
              id,
              at,
              loginEnd,
              currentRequestScope()?.sourceAddress() ?? null,
            )
          : await oidcPayloadsRepository.consume(knex, this.model, id, at);
      if (consumed) {
        held?.logged();
        return;
      }
      if (this.model === 'PushedAuthorizationRequest') {
        throw new errors.InvalidRequestUri('request_uri is invalid, expired, or was already used');
      }
      throw new errors.InvalidGrant(`${this.model} already consumed`);
    }

    async destroy(id: string): Promise<void> {
      if (this.model === 'Interaction' && completedLogins.completedInteraction(requestOf(), id)) return;
      if (this.model === 'Grant') prefetch?.forget(requestContext(), id);
      await oidcPayloadsRepository.destroy(knex, this.model, id);
      if (this.model === 'Grant') await onGrantDestroyed(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      prefetch?.forget(requestContext(), grantId);
      await oidcPayloadsRepository.deleteByGrantId(knex, grantId, this.model);
    }

    /**
     * A device code, kept readable past its expiry until the janitor's margin (the provider then
     * answers `expired_token`). At the token endpoint each find is a poll (RFC 8628 §3.5): the
     * same statement records it, and a poll of a pending code earlier than its interval allows
     * answers `slow_down`, the interval having grown by 5 s. Polls reach any instance, so the
     * interval and the last poll live in the row. A code polled at another issuer than the one the
     * device asked at is not found (and its poll not recorded), as codes and refresh tokens are not.
     */
    private async findDeviceCode(id: string): Promise<AdapterPayload | undefined> {
      const at = now();
      if (id.startsWith(BY_USER_CODE)) {
        // Only the person's side names codes so; a device code sent to the token endpoint in this
        // form is no code (else it would tell which user codes exist, unthrottled).
        if (!PERSON_ROUTES.has(routeOf() ?? '')) return undefined;
        const userCode = id.slice(BY_USER_CODE.length);
        const stored = await oidcPayloadsRepository.findByUserCode(
          knex,
          this.model,
          userCode,
          deviceCodesReadableAfter(at),
        );
        return this.reply(id, stored);
      }
      if (routeOf() !== 'token') {
        return this.reply(
          id,
          await oidcPayloadsRepository.find(knex, this.model, id, deviceCodesReadableAfter(at)),
        );
      }
      // Redeemed only at the issuer the device asked at (as `redeemableHere` for codes and tokens).
      const issuer = (requestContext() as ProviderRequest | undefined)?.oidc?.issuer ?? '';
      const polled = await devicePollsRepository.poll(knex, id, at, deviceCodesReadableAfter(at), issuer, {
        interval: POLL_INTERVAL_SECONDS,
        jitter: POLL_JITTER_SECONDS,
        step: SLOW_DOWN_STEP_SECONDS,
      });
      if (!polled || polled.consumedAt) return this.reply(id, polled);
      const payload = openPayload(id, polled.payload);
      if (polled.tooEarly && isPending(payload, at)) {
        throw new errors.SlowDown(`poll at most every ${polled.interval} seconds`);
      }
      // A confirmed code about to be redeemed is read again with its grant and facts, as codes
      // are (`findWithGrant`): a parallel poll that finds it used revokes the grant, and must not
      // fail this, the winning, poll half-way through issuing.
      const ctx = prefetch && requestContext();
      const confirmed = typeof payload.accountId === 'string' && !payload.error;
      const expired = typeof payload.exp === 'number' && payload.exp * 1000 <= at.getTime();
      if (ctx && confirmed && !expired) return this.findWithGrant(ctx, 'DeviceCode', id);
      return this.reply(id, polled);
    }

    /**
     * The code or token as a plain find returns it; what came along is kept for this request.
     * The code is read with its grant and facts before its consume, so the winner of a race still
     * gets its tokens, which a late replay then revokes (RFC 6749 §4.1.2): the replay's destroy of
     * the grant cannot fail the winner half-way through issuing.
     */
    private async findWithGrant(
      ctx: object,
      model: GrantTokenModel,
      id: string,
    ): Promise<AdapterPayload | undefined> {
      const at = now();
      const found = await tokenWithGrantRepository.find(knex, model, id, at);
      if (!found || !redeemableHere(ctx, found.facts)) return undefined;
      const grantId = found.token.payload.grantId;
      if (typeof grantId === 'string') {
        prefetch!.remember(ctx, grantId, {
          accountId: found.accountId,
          grant: found.grant,
          facts: liveFacts(found.facts, found.sessionExpiresAt, at),
          identity: found.identity,
          requireExtJwtSigner: found.requireExtJwtSigner,
        });
      }
      return this.reply(id, found.token);
    }

    private reply(
      id: string | undefined,
      stored: Awaited<ReturnType<typeof oidcPayloadsRepository.find>>,
    ): AdapterPayload | undefined {
      if (!stored) return undefined;
      const payload = openPayload(id, stored.payload);
      return stored.consumedAt ? { ...payload, consumed: epoch(stored.consumedAt) } : payload;
    }
  };
}
