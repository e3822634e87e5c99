import type { Logger } from 'pino';

/**
 * One security-relevant decision or change: an authentication outcome, an identity, policy,
 * signer or CA change, a revocation, a key rotation. Never carries a secret.
 */
export interface AuditEvent {
  /** Dotted name, e.g. `auth.login`, `identity.created`, `key.rotated`. */
  event: string;
  outcome?: 'success' | 'failure' | 'lockout';
  /** Authentication method (`password`, `cert`, `ext-jwt`, `totp`, …) where one applies. */
  method?: string;
  /** Why a decision failed, as a stable code. */
  reason?: string;
  identityId?: string;
  requestId?: string;
  sourceAddress?: string;
  [detail: string]: unknown;
}

export type AuditListener = (event: AuditEvent) => void;

/**
 * Writes each event as one structured log line (`event` field) and hands it to in-process
 * listeners (metrics count from the same events, so the two never disagree).
 */
export interface AuditTrail {
  record(event: AuditEvent): void;
  subscribe(listener: AuditListener): () => void;
}

export function createAuditTrail(logger: Logger): AuditTrail {
  const listeners = new Set<AuditListener>();
  const log = logger.child({ audit: true });
  return {
    record(event) {
      log.info(event, event.event);
      for (const listener of listeners) listener(event);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
