import type { IncomingMessage } from 'node:http';
import type { Identity } from '../repositories/identities-repository.js';

/** A login step's completion, as the provider's in-process resume of the same request needs it. */
export interface CompletedLogin {
  /** The identity the step has just read and checked. */
  identity: Identity;
  /** The interaction's id and its payload with the login's result, as `persist` would store it. */
  interaction: { uid: string; payload: Record<string, unknown> };
}

/**
 * What a login step completing an auth request hands to the provider's in-process resume of the
 * same request (ADR 0005: the same Node request object). The step has already deleted the
 * interaction's row (its one-time consumption), so the resume's find takes the interaction from
 * here and its destroy has nothing left to delete, and its account lookup takes the identity the
 * step has just read. Kept per request object: nothing outlives it, and another request finds only
 * the database.
 */
export function createCompletedLogins() {
  const byRequest = new WeakMap<IncomingMessage, CompletedLogin>();
  return {
    remember(req: IncomingMessage, login: CompletedLogin): void {
      byRequest.set(req, login);
    },
    /** Undefined unless this request completed a login of exactly this identity. */
    identityFor(req: IncomingMessage | undefined, id: string): Identity | undefined {
      const hit = req && byRequest.get(req);
      return hit?.identity.id === id ? hit.identity : undefined;
    },
    /**
     * The payload of the interaction this request completed, when `uid` names it. Not copied: the
     * step made it for this hand-over and uses it no more.
     */
    interactionFor(req: IncomingMessage | undefined, uid: string): Record<string, unknown> | undefined {
      const hit = req && byRequest.get(req);
      return hit?.interaction.uid === uid ? hit.interaction.payload : undefined;
    },
    /** Whether this request completed (and so already deleted) the interaction `uid`. */
    completedInteraction(req: IncomingMessage | undefined, uid: string): boolean {
      return req !== undefined && byRequest.get(req)?.interaction.uid === uid;
    },
  };
}

export type CompletedLogins = ReturnType<typeof createCompletedLogins>;
