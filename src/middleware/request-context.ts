import type { Context } from 'koa';
import type { Logger } from 'pino';
import { mappedIPv4 } from '../config/cidr.js';
import type { RequestScope } from '../services/request-scope.js';

/**
 * The address of the client, for logs, audit events and per-address limits: the TCP peer, or the
 * client a trusted PROXY protocol header named (listeners/proxy-listener.ts). HTTP proxy headers
 * are never trusted (`app.proxy` stays off). An IPv4 client is always written as IPv4, also when a
 * dual-stack socket or an IPv6 PROXY header reports it as `::ffff:a.b.c.d`, so that one client
 * has one spelling in logs and audit events.
 */
export function clientAddress(ctx: Context): string {
  const { ip } = ctx;
  return mappedIPv4(ip) ?? ip;
}

/**
 * `ctx.state` of a request: its id and a child logger made when first used (at `warn` most
 * requests log nothing). A class, so that the lazy `log` is one prototype accessor rather than a
 * property defined with two closures on every request; handlers add to it as to any state.
 */
export class RequestState {
  [key: string]: unknown;
  #log: Logger | undefined;
  readonly #logger: Logger;

  constructor(
    logger: Logger,
    readonly requestId: string,
  ) {
    this.#logger = logger;
  }

  get log(): Logger {
    return (this.#log ??= this.#logger.child({ requestId: this.requestId }));
  }

  set log(value: Logger) {
    this.#log = value;
  }
}

/** The request scope of one request: the client address is read when an event asks for it. */
export class HttpRequestScope implements RequestScope {
  actorId?: string;
  #beforeResponse: (() => Promise<void>)[] | undefined;

  constructor(
    readonly requestId: string,
    private readonly ctx: Context,
  ) {}

  sourceAddress(): string {
    return clientAddress(this.ctx);
  }

  beforeResponse(hook: () => Promise<void>): void {
    (this.#beforeResponse ??= []).push(hook);
  }

  /** Runs what `beforeResponse` registered, in order (most requests registered nothing). */
  async runBeforeResponse(): Promise<void> {
    const hooks = this.#beforeResponse;
    this.#beforeResponse = undefined;
    if (hooks) for (const hook of hooks) await hook();
  }
}
