import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { newId } from '../../crypto/random.js';
import { inTransaction } from '../../db/transaction.js';
import { withConstraintErrors } from '../../db/constraint-errors.js';
import { AppError } from '../../errors/app-error.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { passkeysRepository, type Passkey } from '../../repositories/passkeys-repository.js';
import {
  webauthnChallengesRepository,
  type ChallengePurpose,
  type WebauthnChallenge,
} from '../../repositories/webauthn-challenges-repository.js';
import { webauthnUserHandlesRepository } from '../../repositories/webauthn-user-handles-repository.js';
import { authenticationResponseSchema, registrationResponseSchema } from '../../schemas/passkey-schemas.js';
import type { PasskeyCreationOptionsView, PasskeyView } from '../../schemas/passkey-views.js';
import { NO_AUDIT, type AuditTrail } from '../audit-trail.js';
import type { IdentityChangeFeed } from '../revocation-service.js';
import type { WebauthnSite } from './webauthn-settings.js';

/**
 * The WebAuthn library, loaded at the first ceremony: with its ASN.1 and CBOR dependencies it
 * costs about 0.3 s of start-up, which an instance whose people never use passkeys would pay for
 * nothing.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthnLibrary = () => (library ??= import('@simplewebauthn/server'));

/** A ceremony's binding: the auth request uid, API session id or account-page session id. */
export interface Ceremony {
  boundTo: string;
}

export type AssertionPurpose = { purpose: 'second-factor'; identityId: string } | { purpose: 'passwordless' };

/** A ceremony must be finished within this time of its options. */
const CHALLENGE_TTL_MS = 5 * 60_000;

/** A sign-in this recent may change the identity's passkeys without proving a factor again. */
const RECENT_SIGN_IN_MS = 5 * 60_000;

/**
 * The sign-in (`auth_time`) is recent enough to add, rename or remove a passkey: a passkey gives
 * lasting access, and removing the last one reopens its registration, so a session left open on a
 * shared computer must not be enough.
 */
export const isRecentSignIn = (authTime: Date | null, now: Date = new Date()): boolean =>
  authTime !== null && now.getTime() - authTime.getTime() <= RECENT_SIGN_IN_MS;
/** What the browser is told to wait (the challenge lives a little longer than the prompt). */
const CEREMONY_TIMEOUT_MS = 4 * 60_000;
/** ES256, EdDSA, RS256: what platform authenticators and security keys use. */
const ALGORITHMS = [-7, -8, -257];

export interface PasskeyServiceDeps {
  knex: Knex;
  /** The relying party's name shown by authenticators (`edge.totp.issuer`). */
  rpName: string;
  /** Publishes a change of an identity's factors (the identity detail shows its passkey count). */
  changes?: IdentityChangeFeed;
  audit?: AuditTrail;
  now?: () => Date;
}

function passkeyView(p: Passkey): PasskeyView {
  return {
    id: p.id,
    name: p.name,
    createdAt: p.createdAt.toISOString(),
    lastUsedAt: p.lastUsedAt?.toISOString() ?? null,
    backedUp: p.backedUp,
  };
}

/** The creation options as the API documents them: the members this service fills, and no other. */
export function creationOptionsView(o: PublicKeyCredentialCreationOptionsJSON): PasskeyCreationOptionsView {
  return {
    rp: { ...(o.rp.id === undefined ? {} : { id: o.rp.id }), name: o.rp.name },
    user: { id: o.user.id, name: o.user.name, displayName: o.user.displayName },
    challenge: o.challenge,
    pubKeyCredParams: o.pubKeyCredParams.map((p) => ({ alg: p.alg, type: 'public-key' as const })),
    ...(o.timeout === undefined ? {} : { timeout: o.timeout }),
    excludeCredentials: (o.excludeCredentials ?? []).map((c) => ({
      id: c.id,
      type: 'public-key' as const,
      ...(c.transports ? { transports: [...c.transports] } : {}),
    })),
    ...(o.authenticatorSelection ? { authenticatorSelection: { ...o.authenticatorSelection } } : {}),
    ...(o.attestation === undefined ? {} : { attestation: o.attestation }),
    ...(o.extensions?.credProps === undefined ? {} : { extensions: { credProps: o.extensions.credProps } }),
  };
}

const notFound = () => new AppError('NOT_FOUND', { message: 'no such passkey' });
const DOES_NOT_VERIFY = 'the response does not verify (origin, rpId, signature or format)';
const refusedRegistration = (reason: string) =>
  new AppError('PASSKEY_REGISTRATION_FAILED', { cause: { reason } });
const refusedAssertion = (reason: string) =>
  new AppError('INVALID_AUTH', { message: 'the passkey was not accepted', detail: { reason } });

/**
 * The challenge a response answers, read from its clientDataJSON (the schema bounded its size);
 * undefined when that is not JSON with a string challenge.
 */
function challengeOf(clientDataJSON: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { challenge } = parsed as { challenge?: unknown };
    return typeof challenge === 'string' && challenge.length > 0 && challenge.length <= 512
      ? challenge
      : undefined;
  } catch {
    return undefined;
  }
}

/** A library error's message, for the log only (it may name what the response said). */
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 200);

/**
 * `firstOnly`: the registration a login makes mid-flow, which only a password paid. It may add the
 * identity's first passkey, never a further one (that takes a passkey, or a recent sign-in on the
 * account page).
 */
export interface RegistrationScope {
  firstOnly?: boolean;
}

const alreadyHasOne = () =>
  new AppError('INVALID_AUTH_REQUEST', {
    message: 'the identity already has a passkey: sign in with it instead of registering another',
  });

/**
 * Passkeys (WebAuthn credentials; an extension beyond the service's specification): registration,
 * the owner's list, renaming and removal, and assertions for the login (second factor or
 * passwordless). Each ceremony's challenge is stored for 5 minutes, bound to the auth request or
 * session that asked for it, and consumed by one conditional statement, so any instance finishes
 * a ceremony, once. Failures of assertions are not counted here: the login counts them (per
 * address for passwordless, per identity for a second factor).
 */
export function createPasskeyService({
  knex,
  rpName,
  changes,
  audit = NO_AUDIT,
  now = () => new Date(),
}: PasskeyServiceDeps) {
  async function storeChallenge(
    challenge: string,
    purpose: ChallengePurpose,
    identityId: string | null,
    c: Ceremony,
    site: WebauthnSite,
  ): Promise<void> {
    await webauthnChallengesRepository.insert(knex, {
      challenge,
      purpose,
      identityId,
      boundTo: c.boundTo,
      rpId: site.rpId,
      expiresAt: new Date(now().getTime() + CHALLENGE_TTL_MS),
    });
  }

  /** Takes the ceremony's challenge: undefined when it is unknown, used, expired or someone else's. */
  function consumeChallenge(
    challenge: string | undefined,
    purpose: ChallengePurpose,
    c: Ceremony,
  ): Promise<WebauthnChallenge | undefined> {
    if (challenge === undefined) return Promise.resolve(undefined);
    return webauthnChallengesRepository.consume(knex, { challenge, purpose, boundTo: c.boundTo }, now());
  }

  const descriptors = (passkeys: Passkey[]) =>
    passkeys.map((p) => ({ id: p.credentialId, transports: p.transports }));

  async function registrationOptions(
    identity: { id: string; name: string },
    c: Ceremony,
    site: WebauthnSite,
    opts: RegistrationScope = {},
  ): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; warnings: string[] }> {
    const own = await passkeysRepository.listForIdentity(knex, identity.id);
    if (opts.firstOnly && own.length > 0) throw alreadyHasOne();
    const handle = await webauthnUserHandlesRepository.findOrCreate(
      knex,
      identity.id,
      randomBytes(32).toString('base64url'),
    );
    const options = await (
      await webauthnLibrary()
    ).generateRegistrationOptions({
      rpName,
      rpID: site.rpId,
      userName: identity.name,
      userDisplayName: identity.name,
      userID: new Uint8Array(Buffer.from(handle, 'base64url')),
      timeout: CEREMONY_TIMEOUT_MS,
      attestationType: 'none',
      excludeCredentials: descriptors(own),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
      supportedAlgorithmIDs: ALGORITHMS,
    });
    await storeChallenge(options.challenge, 'registration', identity.id, c, site);
    const elsewhere = [...new Set(own.filter((p) => p.rpId !== site.rpId).map((p) => p.rpId))];
    const warnings = elsewhere.map(
      (rpId) =>
        `passkeys registered for ${rpId} do not work at ${site.rpId} (webauthn.rpId changed); ` +
        'register a new one here',
    );
    return { options, warnings };
  }

  async function register(
    identityId: string,
    c: Ceremony,
    site: WebauthnSite,
    input: { name: string; response: unknown },
    opts: RegistrationScope = {},
  ): Promise<PasskeyView> {
    try {
      return await registerChecked(identityId, c, site, input, opts);
    } catch (err) {
      if (err instanceof AppError && err.code === 'PASSKEY_REGISTRATION_FAILED') {
        // No write comes with a refused registration: the event is a statement of its own.
        await audit.storeAlone({
          event: 'passkey.registration-failed',
          identityId,
          // The logged detail names a reason the client is not told (another identity's credential).
          reason: String(
            (err.detail as { reason?: string } | undefined)?.reason ??
              (err.clientCause as { reason?: string } | undefined)?.reason ??
              'refused',
          ),
        });
      }
      throw err;
    }
  }

  async function registerChecked(
    identityId: string,
    c: Ceremony,
    site: WebauthnSite,
    input: { name: string; response: unknown },
    opts: RegistrationScope,
  ): Promise<PasskeyView> {
    const parsed = registrationResponseSchema.safeParse(input.response);
    if (!parsed.success) throw refusedRegistration('the response is not a WebAuthn registration response');
    const response = parsed.data as unknown as RegistrationResponseJSON;
    const challenge = await consumeChallenge(
      challengeOf(parsed.data.response.clientDataJSON),
      'registration',
      c,
    );
    if (!challenge || challenge.identityId !== identityId) {
      throw refusedRegistration('no such registration in progress for this session (or it expired)');
    }
    let info;
    try {
      const verified = await (
        await webauthnLibrary()
      ).verifyRegistrationResponse({
        response,
        expectedChallenge: challenge.challenge,
        expectedOrigin: site.origins,
        expectedRPID: challenge.rpId,
        requireUserVerification: false,
        supportedAlgorithmIDs: ALGORITHMS,
      });
      if (!verified.verified) throw new Error('not verified');
      info = verified.registrationInfo;
    } catch (err) {
      throw new AppError('PASSKEY_REGISTRATION_FAILED', {
        cause: { reason: DOES_NOT_VERIFY },
        detail: { error: messageOf(err) },
      });
    }
    const { credential } = info;
    if (credential.id !== response.id) throw refusedRegistration('the credential id does not match');
    const created = await heldElsewhereIsRefused(identityId, credential.id, () =>
      withConstraintErrors(() =>
        inTransaction(knex, async (trx, afterCommit) => {
          if (opts.firstOnly) {
            // The identity row is locked until commit: of two parallel first registrations, the
            // second waits here and then sees the first one's passkey.
            await identitiesRepository.findByIdForUpdate(trx, identityId);
            if ((await passkeysRepository.countForIdentity(trx, identityId)) > 0) throw alreadyHasOne();
          }
          const passkey = await passkeysRepository.insert(
            trx,
            {
              id: newId(),
              identityId,
              credentialId: credential.id,
              publicKey: credential.publicKey,
              signCount: credential.counter,
              transports: (credential.transports ?? parsed.data.response.transports ?? []).slice(0, 16),
              backedUp: info.credentialBackedUp,
              deviceType: info.credentialDeviceType,
              rpId: challenge.rpId,
              name: input.name,
            },
            now(),
          );
          await changes?.identityChanged(trx, afterCommit, identityId);
          await audit.store(trx, afterCommit, {
            event: 'passkey.registered',
            identityId,
            passkeyId: passkey.id,
            rpId: site.rpId,
          });
          return passkey;
        }),
      ),
    );
    return passkeyView(created);
  }

  /**
   * A credential id another identity holds is answered like a response that does not verify: a
   * 409 would tell anyone who sends a credential id whether it is registered here. The caller's
   * own (which excludeCredentials keeps the browser from creating again) stays a clear 409.
   */
  async function heldElsewhereIsRefused<T>(
    identityId: string,
    credentialId: string,
    insert: () => Promise<T>,
  ): Promise<T> {
    try {
      return await insert();
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
      const holder = await passkeysRepository.findByCredentialId(knex, credentialId);
      if (holder !== undefined && holder.identityId === identityId) throw err;
      throw new AppError('PASSKEY_REGISTRATION_FAILED', {
        cause: { reason: DOES_NOT_VERIFY },
        detail: { reason: 'credential-of-another-identity' },
      });
    }
  }

  async function list(identityId: string): Promise<PasskeyView[]> {
    return (await passkeysRepository.listForIdentity(knex, identityId)).map(passkeyView);
  }

  async function rename(identityId: string, passkeyId: string, name: string): Promise<PasskeyView> {
    const renamed = await inTransaction(knex, async (trx, afterCommit) => {
      const row = await passkeysRepository.rename(trx, identityId, passkeyId, name);
      if (!row) throw notFound();
      await audit.store(trx, afterCommit, { event: 'passkey.renamed', identityId, passkeyId });
      return row;
    });
    return passkeyView(renamed);
  }

  /**
   * Removes one of the identity's passkeys; `actor` is who asked (the owner, or an admin through
   * the authenticators), for the audit trail.
   */
  async function remove(identityId: string, passkeyId: string, actor?: string): Promise<void> {
    await inTransaction(knex, async (trx, afterCommit) => {
      const removed = await passkeysRepository.delete(trx, passkeyId, identityId);
      if (!removed) throw notFound();
      await changes?.identityChanged(trx, afterCommit, identityId);
      await audit.store(trx, afterCommit, {
        event: 'passkey.removed',
        identityId,
        passkeyId,
        ...(actor === undefined ? {} : { actorId: actor }),
      });
    });
  }

  function count(identityId: string): Promise<number> {
    return passkeysRepository.countForIdentity(knex, identityId);
  }

  async function assertionOptions(
    p: AssertionPurpose,
    c: Ceremony,
    site: WebauthnSite,
  ): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allow =
      p.purpose === 'second-factor'
        ? descriptors(
            (await passkeysRepository.listForIdentity(knex, p.identityId)).filter(
              (k) => k.rpId === site.rpId,
            ),
          )
        : [];
    const options = await (
      await webauthnLibrary()
    ).generateAuthenticationOptions({
      rpID: site.rpId,
      allowCredentials: allow,
      timeout: CEREMONY_TIMEOUT_MS,
      userVerification: p.purpose === 'passwordless' ? 'required' : 'preferred',
    });
    await storeChallenge(
      options.challenge,
      p.purpose,
      p.purpose === 'second-factor' ? p.identityId : null,
      c,
      site,
    );
    return options;
  }

  /**
   * Checks a passkey assertion and records the use. Garbage of any kind (bad base64, CBOR, JSON,
   * types, sizes) is 401 INVALID_AUTH like a wrong signature, never a 5xx.
   */
  async function verifyAssertion(
    p: AssertionPurpose,
    c: Ceremony,
    site: WebauthnSite,
    response: unknown,
  ): Promise<{ identityId: string; passkeyId: string; userVerified: boolean }> {
    const parsed = authenticationResponseSchema.safeParse(response);
    if (!parsed.success) throw refusedAssertion('not a WebAuthn assertion');
    const challenge = await consumeChallenge(challengeOf(parsed.data.response.clientDataJSON), p.purpose, c);
    if (!challenge) throw refusedAssertion('no such ceremony in progress (or it expired)');
    if (p.purpose === 'second-factor' && challenge.identityId !== p.identityId) {
      throw refusedAssertion('the ceremony belongs to another identity');
    }
    const passkey = await passkeysRepository.findByCredentialId(knex, parsed.data.id);
    if (!passkey) throw refusedAssertion('unknown credential');
    if (p.purpose === 'second-factor' && passkey.identityId !== p.identityId) {
      throw refusedAssertion("another identity's credential");
    }
    if (passkey.rpId !== challenge.rpId) throw refusedAssertion('credential of another rpId');
    if (p.purpose === 'passwordless') await checkUserHandle(passkey, parsed.data.response.userHandle);

    let info;
    try {
      const verified = await (
        await webauthnLibrary()
      ).verifyAuthenticationResponse({
        response: parsed.data as unknown as AuthenticationResponseJSON,
        expectedChallenge: challenge.challenge,
        expectedOrigin: site.origins,
        expectedRPID: challenge.rpId,
        // The counter rule is ours (below): the library would refuse a clone without saying so.
        credential: { id: passkey.credentialId, publicKey: passkey.publicKey, counter: 0 },
        requireUserVerification: p.purpose === 'passwordless',
      });
      if (!verified.verified) throw new Error('not verified');
      info = verified.authenticationInfo;
    } catch (err) {
      throw new AppError('INVALID_AUTH', {
        message: 'the passkey was not accepted',
        detail: { reason: 'verification failed', error: messageOf(err) },
      });
    }
    const used = await passkeysRepository.recordUse(knex, passkey.id, {
      signCount: info.newCounter,
      backedUp: info.credentialBackedUp,
      at: now(),
    });
    if (!used) {
      // A counter that did not grow: a copy of the authenticator, or one response replayed in
      // parallel (the challenge makes the second impossible). Either way the passkey is suspect.
      // The refused assertion writes nothing (recordUse changed no row): a statement of its own.
      await audit.storeAlone({
        event: 'passkey.clone-suspected',
        purpose: p.purpose,
        identityId: passkey.identityId,
        passkeyId: passkey.id,
        storedCount: passkey.signCount,
        presentedCount: info.newCounter,
      });
      throw refusedAssertion('signature counter did not grow');
    }
    return { identityId: passkey.identityId, passkeyId: passkey.id, userVerified: info.userVerified };
  }

  /** A discoverable credential returns its user handle: it must be the identity's own. */
  async function checkUserHandle(passkey: Passkey, userHandle: string | undefined): Promise<void> {
    if (userHandle === undefined) return;
    const handle = await webauthnUserHandlesRepository.find(knex, passkey.identityId);
    if (handle !== userHandle.replace(/=+$/, '')) throw refusedAssertion('user handle does not match');
  }

  return {
    registrationOptions,
    register,
    list,
    rename,
    remove,
    count,
    assertionOptions,
    verifyAssertion,
  };
}

export type PasskeyService = ReturnType<typeof createPasskeyService>;
