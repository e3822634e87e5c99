import type { Context } from 'koa';

/** A Host that can stand in a source expression as it is (a name or IPv4 address, a port). */
const PLAIN_HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$/;

/**
 * The CSP source allowing exactly one script file of this origin (by its URL, not any
 * same-origin script), or undefined when the Host could not stand in the header unchanged: a
 * hostile Host (`;`, spaces, quotes) would otherwise add directives of its own, so such a page
 * gets no script at all. Every listener is HTTPS.
 */
export function scriptSourceFor(ctx: Context, path: string): string | undefined {
  return PLAIN_HOST.test(ctx.host) ? `https://${ctx.host}${path}` : undefined;
}
