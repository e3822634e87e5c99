import type { IncomingMessage } from 'node:http';
import type { Identity } from '../repositories/identities-repository.js';

/**
 * The identity a login step has just read and checked, handed to the provider's in-process resume
 * of the same request (ADR 0005: the same Node request object), so the resume's account lookup
 * does not read it a third time within the step. Kept per request object: nothing outlives it.
 */
export function createCompletedLogins() {
  const byRequest = new WeakMap<IncomingMessage, Identity>();
  return {
    remember(req: IncomingMessage, identity: Identity): void {
      byRequest.set(req, identity);
    },
    /** Undefined unless this request completed a login of exactly this identity. */
    identityFor(req: IncomingMessage | undefined, id: string): Identity | undefined {
      const hit = req && byRequest.get(req);
      return hit?.id === id ? hit : undefined;
    },
  };
}

export type CompletedLogins = ReturnType<typeof createCompletedLogins>;
