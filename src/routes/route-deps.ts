import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config/load-config.js';
import type { PrincipalResolver } from '../middleware/authenticate.js';
import type { SessionService } from '../services/session-service.js';
import type { PasswordMethod } from '../services/auth/password-method.js';
import type { IdentityView } from '../services/identity-view.js';
import type { PkiMaterial } from '../services/pki-service.js';

/** What route modules may use: services, never repositories. */
export interface RouteDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  pki: PkiMaterial;
  sessions: SessionService;
  passwordMethod: PasswordMethod;
  principals: PrincipalResolver;
  identityView: IdentityView;
  /** Loads one identity by id for `current-identity` and friends. */
  findIdentity: (
    id: string,
  ) => Promise<import('../repositories/identities-repository.js').Identity | undefined>;
}
