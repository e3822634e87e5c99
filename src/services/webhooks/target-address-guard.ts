import { readFile } from 'node:fs/promises';
import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type Socket } from 'node:net';
import { privateAddressKind } from './private-address.js';

/** Resolves a host name to its addresses; `systemResolver` unless a test passes one. */
export type ResolveHost = (hostname: string) => Promise<readonly LookupAddress[]>;

/** How long one DNS query waits for an answer, and how often it is sent. */
const DNS_TIMEOUT_MS = 2_000;
const DNS_TRIES = 2;

/** The addresses `/etc/hosts` gives `hostname`, read afresh (it is small and may change). */
async function hostsFileAddresses(hostname: string, path = '/etc/hosts'): Promise<LookupAddress[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  const name = hostname.toLowerCase();
  const found: LookupAddress[] = [];
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    const family = address ? isIP(address) : 0;
    if ((family === 4 || family === 6) && names.some((n) => n.toLowerCase() === name))
      found.push({ address: address!, family });
  }
  return found;
}

/**
 * Host names resolved by c-ares (`dns.Resolver`: A and AAAA queries with a timeout), never by
 * `dns.lookup`: that one runs `getaddrinfo` on libuv's thread pool, which password hashing shares,
 * so a slow or hostile name server would hold up logins. Names in `/etc/hosts` are answered from
 * it first, as the system resolver would.
 */
export const systemResolver: ResolveHost = async (hostname) => {
  const listed = await hostsFileAddresses(hostname);
  if (listed.length > 0) return listed;
  const resolver = new dns.Resolver({ timeout: DNS_TIMEOUT_MS, tries: DNS_TRIES });
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  const answers = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (answers.length > 0) return answers;
  // Neither query answered: the IPv4 one's error says why (not found, timeout, refused).
  throw v4.status === 'rejected' ? v4.reason : new Error(`no address for ${hostname}`);
};

/** The code of the errors below, so that their message (written here, safe to show) is kept. */
export const TARGET_REFUSED = 'ERR_WEBHOOK_TARGET_REFUSED';

const refusal = (message: string) => Object.assign(new Error(message), { code: TARGET_REFUSED });

/**
 * Why a connection to `address` is refused, or undefined when it may be made. The address is
 * named only when `named` (the URL holds it, so the admin wrote it): an address a host name
 * resolved to stays unsaid, or the refusals would map the internal network for whoever may set
 * a webhook's URL.
 */
function refusedAddressProblem(
  address: string,
  allowPrivateTargets: boolean,
  named = false,
): string | undefined {
  if (allowPrivateTargets) return undefined;
  const kind = privateAddressKind(address);
  if (!kind) return undefined;
  return named
    ? `target address ${address} is ${kind} (webhooks.allowPrivateTargets)`
    : `target address is ${kind} (webhooks.allowPrivateTargets)`;
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
 * covers literal addresses, which `net.connect` dials without calling `lookup`; `literal` says
 * the URL held the address, which the refusal may then name.
 */
export function guardConnectedAddress(socket: Socket, allowPrivateTargets: boolean, literal = false): void {
  socket.prependOnceListener('connect', () => {
    const address = socket.remoteAddress;
    const problem =
      address === undefined
        ? 'connection closed'
        : refusedAddressProblem(address, allowPrivateTargets, literal);
    if (problem) socket.destroy(refusal(problem));
  });
}
