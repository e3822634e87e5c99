import type { RateLimiter } from '../middleware/rate-limit.js';
import type { PrincipalResolver } from '../middleware/authenticate.js';
import type { SessionService } from '../services/session-service.js';
import type { PasswordMethod } from '../services/auth/password-method.js';
import type { TotpService } from '../services/mfa/totp-service.js';
import type { IdentityService } from '../services/identity-service.js';
import type { EnrollmentService } from '../services/enrollment-service.js';
import type { AuthenticatorService } from '../services/authenticator-service.js';
import type { EnrollmentCompletion } from '../services/enrollment-completion.js';
import type { PolicyService } from '../services/policy-service.js';
import type { SignerService } from '../services/signer-service.js';
import type { CaService } from '../services/ca-service.js';
import type { CertMethod } from '../services/auth/cert-method.js';
import type { ExtJwtMethod } from '../services/auth/ext-jwt-method.js';
import type { Oidc } from '../oidc/create-oidc.js';

/** What route modules may use: services, never repositories. */
export interface RouteDeps {
  sessions: SessionService;
  passwordMethod: PasswordMethod;
  principals: PrincipalResolver;
  /** TOTP second factor. */
  totp: TotpService;
  /** Identities, enrollments, authenticators and enrollment completion. */
  identities: IdentityService;
  enrollments: EnrollmentService;
  authenticators: AuthenticatorService;
  enroll: EnrollmentCompletion;
  /** Auth policies, external JWT signers, 3rd-party CAs and their primary methods. */
  policies: PolicyService;
  signers: SignerService;
  cas: CaService;
  certMethod: CertMethod;
  extJwtMethod: ExtJwtMethod;
  /** Per-address limit on login, authenticate, enroll and token endpoints. */
  loginLimiter: RateLimiter;
  /** Per-address limit on `GET /oidc/authorization`, which stores an auth request per call. */
  authorizationLimiter: RateLimiter;
  /** The OIDC provider, login flow, token verifier and signing keys (engineer D); absent without `edge`. */
  oidc?: Oidc;
  /** Loads one identity by id for `current-identity` and friends. */
  findIdentity: (
    id: string,
  ) => Promise<import('../repositories/identities-repository.js').Identity | undefined>;
}
