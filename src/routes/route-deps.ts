import type { RateLimiter } from '../middleware/rate-limit.js';
import type { PrincipalResolver } from '../middleware/authenticate.js';
import type { SessionService } from '../services/session-service.js';
import type { PasswordMethod } from '../services/auth/password-method.js';
import type { PasskeyMethod } from '../services/auth/passkey-method.js';
import type { PasskeyFactor } from '../services/mfa/passkey-factor.js';
import type { TotpService } from '../services/mfa/totp-service.js';
import type { PasskeyService } from '../services/passkeys/passkey-service.js';
import type { WebauthnSettings } from '../services/passkeys/webauthn-settings.js';
import type { IdentityService } from '../services/identity-service.js';
import type { EnrollmentService } from '../services/enrollment-service.js';
import type { AuthenticatorService } from '../services/authenticator-service.js';
import type { EnrollmentCompletion } from '../services/enrollment-completion.js';
import type { PolicyService } from '../services/policy-service.js';
import type { SignerService } from '../services/signer-service.js';
import type { CaService } from '../services/ca-service.js';
import type { CertificateBlocks } from '../services/certificate-blocks.js';
import type { CertMethod } from '../services/auth/cert-method.js';
import type { ExtJwtMethod } from '../services/auth/ext-jwt-method.js';
import type { Oidc } from '../oidc/create-oidc.js';
import type { AuditTrail } from '../services/audit-trail.js';
import type { ApiSessionView } from '../services/api-session-view.js';
import type { ApiSessionEnding } from '../services/api-session-ending.js';
import type { AccountSessionService } from '../services/account/account-session-service.js';
import type { AuditEventQuery } from '../services/audit-event-query.js';
import type { UserCodeThrottle } from './user-code-throttle.js';
import type { WebhookService } from '../services/webhooks/webhook-service.js';
import type { WebhookDeliveryAdmin } from '../services/webhooks/webhook-delivery-admin.js';
import type { VersionReport } from '../services/version-report.js';

/**
 * What route modules may use: services, never repositories, so that every rule about the data
 * (validation, transactions, revocation) is enforced below the HTTP layer and only once. Built
 * complete by `src/compose.ts`; routes exist only when the `edge` section is configured, and then
 * every member is present.
 */
export interface RouteDeps {
  sessions: SessionService;
  /** Who is signed in: the live API sessions, legacy and OIDC, as admins and identities see them. */
  apiSessionView: ApiSessionView;
  passwordMethod: PasswordMethod;
  /** Passkeys (an extension beyond the specification): passwordless login, second factor, ceremonies. */
  passkeyMethod: PasskeyMethod;
  passkeyFactor: PasskeyFactor;
  /** Resolves the caller of an authenticated endpoint from a session or bearer token. */
  principals: PrincipalResolver;
  /** TOTP enrollment and verification, for the self-service MFA endpoints. */
  totp: TotpService;
  /** Passkeys (WebAuthn): registration, the owner's list, assertions. */
  passkeys: PasskeyService;
  /** The WebAuthn site (rpId, origins) and whether a request's host can use passkeys. */
  webauthn: WebauthnSettings;
  identities: IdentityService;
  enrollments: EnrollmentService;
  authenticators: AuthenticatorService;
  /** Redeems an enrollment token for a certificate or a password. */
  enroll: EnrollmentCompletion;
  policies: PolicyService;
  signers: SignerService;
  cas: CaService;
  /** The per-CA block lists of certificates auto CA enrollment refuses. */
  certificateBlocks: CertificateBlocks;
  /** The primary login methods besides the password, shared by `/authenticate` and the OIDC login. */
  certMethod: CertMethod;
  extJwtMethod: ExtJwtMethod;
  /** Per-address limit on login, authenticate, enroll and token endpoints: slows password guessing. */
  loginLimiter: RateLimiter;
  /** Per-address limit on `GET /oidc/authorization`, which stores an auth request per call. */
  authorizationLimiter: RateLimiter;
  /** Wrong user codes at `POST /oidc/device`, per address (`WRONG_USER_CODES_PER_MINUTE`). */
  userCodeThrottle: UserCodeThrottle;
  /** Per calling identity (not per address) on `POST /oidc/token/introspection`. */
  introspectionLimiter: RateLimiter;
  /** The OIDC provider, its login flow, token verifier, sessions and signing keys. */
  oidc: Oidc;
  /** Security events; the services record their own, routes only the login decisions. */
  audit: AuditTrail;
  /** Ends API sessions of any kind on an admin's or their identity's request. */
  apiSessionEnding: ApiSessionEnding;
  /** The account page's own sessions (`/account/`). */
  accountSessions: AccountSessionService;
  /** Webhooks (admins): their subscriptions and secrets, and what an admin sees of their deliveries. */
  webhooks: WebhookService;
  webhookDeliveries: WebhookDeliveryAdmin;
  /** The stored audit trail, newest first or followed after a cursor. */
  auditEvents: AuditEventQuery;
  /** The running release, runtime and the database's newest migration (admins only). */
  versionReport: VersionReport;
}
