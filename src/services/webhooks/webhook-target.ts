import { isIP } from 'node:net';
import { privateAddressKind } from './private-address.js';

const MAX_URL_LENGTH = 2048;

const PRIVATE_SETTING = '(allowed only with webhooks.allowPrivateTargets)';

/**
 * Whether `url` may be a webhook's target, checked when a webhook is created or changed and again
 * before every delivery: an absolute `https://` URL of at most 2048 characters, without user name,
 * password, fragment, spaces or control characters, and, unless private targets are allowed,
 * neither `localhost` (or a name under it) nor a literal address of a private, loopback,
 * link-local, CGNAT, unique-local, multicast, unspecified or reserved range (or an IPv4-mapped,
 * IPv4-compatible, NAT64 or 6to4 form of one). A DNS name is checked again on every delivery, on
 * the address actually connected (outbound-post.ts).
 *
 * @returns a sentence saying what is wrong, or undefined when the URL is acceptable.
 */
export function webhookUrlProblem(url: string, allowPrivateTargets: boolean): string | undefined {
  if (url.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  // The URL parser drops some of these silently: what is stored must be what is called.
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u0020\u007f-\u009f]/.test(url)) return 'must not contain spaces or control characters';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  // `https:host` and `https:\\host` parse as https://host/; only the plain form is accepted.
  if (parsed.protocol !== 'https:' || !/^https:\/\//i.test(url)) return 'must be an https:// URL';
  const authority = url.slice('https://'.length).split(/[/?#\\]/, 1)[0]!;
  if (authority.includes('@') || parsed.username || parsed.password)
    return 'must not contain a user name or password';
  if (url.includes('#')) return 'must not have a fragment';
  if (parsed.hostname === '') return 'must name a host';
  if (allowPrivateTargets) return undefined;
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) {
    const kind = privateAddressKind(host);
    return kind && `names the ${kind} address ${host} ${PRIVATE_SETTING}`;
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return `names localhost ${PRIVATE_SETTING}`;
  return undefined;
}
