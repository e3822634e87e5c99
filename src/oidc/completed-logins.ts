import type { IncomingMessage } from 'node:http';
import type { Identity } from '../repositories/identities-repository.js';

/** A login step's completion, as the provider's in-process resume of the same request needs it. */
export interface CompletedLogin {
  /** The identity the step has just read and checked. */
  identity: Identity;
  /**
   * The interaction's id and its payload with the login's result: what `persist` would hand to the
   * adapter (`getValueAndPayload`, before the adapter's `sealPayload`).
   */
  interaction: { uid: string; payload: Record<string, unknown> };
  /**
   * Under a session limit the step has already written the login's API session (the limit's
   * transaction): its id and end. The grant's facts are then written alone, with that end.
   */
  openedSession?: { id: string; expiresAt: Date };
}

/**
 * What a login step completing an auth request hands to the provider's in-process resume of the
 * same request (ADR 0005: the same Node request object). The step has already marked the
 * interaction's row consumed (its one-time consumption, `oidcPayloadsRepository.consume`), and the
 * adapter's `find` treats a consumed interaction as gone: so the resume's find takes the
 * interaction from here, its destroy leaves the consumed row to the janitor (which removes it when
 * it expires), and its account lookup takes the identity the step has just read. Kept per request
 * object: nothing outlives it, and another request finds only the database.
 *
 * Keyed by the Node request, not by a Koa context: the step runs in our Koa app's context, and
 * the provider's `callback()` wraps the same `req` in a context of its own, which the adapter
 * reaches through `Provider.ctx` (an AsyncLocalStorage). The grant prefetch (grant-prefetch.ts),
 * whose reads and uses all happen inside the provider, keys by the provider's context instead.
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
     * The payload of the interaction this request completed, when `uid` names it. Handed over as
     * the step left it (the adapter's `openPayload` copies only its top level): the step made it
     * for this hand-over and uses it no more.
     */
    interactionFor(req: IncomingMessage | undefined, uid: string): Record<string, unknown> | undefined {
      const hit = req && byRequest.get(req);
      return hit?.interaction.uid === uid ? hit.interaction.payload : undefined;
    },
    /** The end of the API session `apiSessionId` when this request's step has written it already. */
    openedSessionEnd(req: IncomingMessage | undefined, apiSessionId: string): Date | undefined {
      const opened = req && byRequest.get(req)?.openedSession;
      return opened?.id === apiSessionId ? opened.expiresAt : undefined;
    },
    /** Whether this request completed (and so already consumed) the interaction `uid`. */
    completedInteraction(req: IncomingMessage | undefined, uid: string): boolean {
      return req !== undefined && byRequest.get(req)?.interaction.uid === uid;
    },
  };
}

export type CompletedLogins = ReturnType<typeof createCompletedLogins>;
