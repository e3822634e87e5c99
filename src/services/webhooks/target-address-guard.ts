import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import type { Socket } from 'node:net';
import { privateAddressKind } from './private-address.js';

/** Resolves a host name to its addresses; `dns.lookup` (the system resolver) unless a test passes one. */
export type ResolveHost = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolver: ResolveHost = (hostname) =>
  dns.lookup(hostname, { all: true, order: 'verbatim' });

/** The code of the errors below, so that their message (written here, safe to show) is kept. */
export const TARGET_REFUSED = 'ERR_WEBHOOK_TARGET_REFUSED';

const refusal = (message: string) => Object.assign(new Error(message), { code: TARGET_REFUSED });

/** Why a connection to `address` is refused, or undefined when it may be made. */
export function refusedAddressProblem(address: string, allowPrivateTargets: boolean): string | undefined {
  if (allowPrivateTargets) return undefined;
  const kind = privateAddressKind(address);
  return kind && `target address ${address} is ${kind} (webhooks.allowPrivateTargets)`;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect` that resolves once, drops the refused addresses and hands the socket
 * only those it checked: the connection goes to an address judged here, never to a second answer
 * of the resolver (DNS rebinding).
 */
export function pinnedLookup(resolve: ResolveHost, allowPrivateTargets: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (answers) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const wanted = answers.filter((a) => family === undefined || a.family === family);
        const problems = wanted.map((a) => refusedAddressProblem(a.address, allowPrivateTargets));
        const usable = wanted.filter((_, i) => problems[i] === undefined);
        if (usable.length === 0) {
          const refused = problems.find((p) => p !== undefined);
          const err = refused
            ? refusal(refused)
            : Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' });
          callback(err, options.all ? [] : '', undefined);
          return;
        }
        if (options.all)
          callback(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : '', undefined),
    );
  };
}

/**
 * Checks the address `socket` actually connected to before anything is sent on it: the listener
 * runs ahead of the TLS client's own, so a refused peer never even sees the ClientHello. It also
 * covers literal addresses, which `net.connect` dials without calling `lookup`.
 */
export function guardConnectedAddress(socket: Socket, allowPrivateTargets: boolean): void {
  socket.prependOnceListener('connect', () => {
    const address = socket.remoteAddress;
    const problem =
      address === undefined ? 'connection closed' : refusedAddressProblem(address, allowPrivateTargets);
    if (problem) socket.destroy(refusal(problem));
  });
}
