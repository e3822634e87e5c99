import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What the services may know of the request they run for, without knowing HTTP: its id, the
 * address of the client, and who is calling once authentication has said so. Set by the
 * request frame (middleware/request-frame.ts) for the whole request (docs/architecture.md,
 * "Audit trail").
 */
export interface RequestScope {
  readonly requestId: string;
  /** Read when an event is recorded, so that whatever sets the client address later still counts. */
  sourceAddress(): string | undefined;
  /** The authenticated caller, set by the authentication middleware. */
  actorId?: string;
  /**
   * Registers work the request frame runs once the handler is done (also when it failed), before
   * the response goes out: audit events held for a write that never came (services/audit-trail.ts).
   */
  beforeResponse?(hook: () => Promise<void>): void;
}

// The one process-wide store: a context that follows the request through every await, which is
// exactly what AsyncLocalStorage is; it holds nothing between requests.
const storage = new AsyncLocalStorage<RequestScope>();

/** Runs `work(...args)` in the scope (arguments rather than a closure: one allocation less per request). */
export function runInRequestScope<A extends unknown[], T>(
  scope: RequestScope,
  work: (...args: A) => T,
  ...args: A
): T {
  return storage.run(scope, work, ...args);
}

export function currentRequestScope(): RequestScope | undefined {
  return storage.getStore();
}

/** Runs work that belongs to no request (e.g. a read shared by whoever asks first). */
export function outsideRequestScope<T>(work: () => T): T {
  return storage.exit(work);
}
