import { isIP } from 'node:net';
import { AppError } from '../../errors/app-error.js';

/** The WebAuthn relying party a ceremony runs for: its id and the origins its pages are served at. */
export interface WebauthnSite {
  rpId: string;
  origins: string[];
}

export interface WebauthnSettingsInput {
  /** `webauthn.rpId`; unset: derived from the bind points. */
  rpId?: string;
  /** `webauthn.origins`; unset: derived from the bind points. */
  origins?: string[];
  /** The `host:port` addresses clients use, of every listener serving the Edge APIs or OIDC, in order. */
  addresses: string[];
  /** `tls.cert` is configured: browsers can trust the server certificate without a local CA. */
  trustedTls: boolean;
}

const RP_SETTING = 'webauthn.rpId (SVC_WEBAUTHN_RP_ID)';
const ORIGINS_SETTING = 'webauthn.origins (SVC_WEBAUTHN_ORIGINS)';

/** The host of `host:port` (IPv6 without brackets), lower case. */
function hostOf(address: string): string {
  const trimmed = address.trim().toLowerCase();
  if (trimmed.startsWith('[')) return trimmed.slice(1, trimmed.indexOf(']'));
  const colon = trimmed.lastIndexOf(':');
  return colon === -1 ? trimmed : trimmed.slice(0, colon);
}

const portOf = (address: string) => {
  const colon = address.lastIndexOf(':');
  return colon === -1 || address.endsWith(']') ? '443' : address.slice(colon + 1);
};

/** `host` is the rpId or a name under it (WebAuthn's "registrable domain suffix" rule, simplified). */
const within = (host: string, rpId: string) => host === rpId || host.endsWith(`.${rpId}`);

/**
 * The WebAuthn relying party of this deployment (passkeys are an extension beyond the service's
 * specification). By default its id is the DNS name of the first bind point that has one, and its
 * origins every bind point under that name; both can be configured for a proxy that serves the
 * pages elsewhere.
 */
export function createWebauthnSettings(input: WebauthnSettingsInput) {
  const named = input.addresses.filter((a) => isIP(hostOf(a)) === 0);
  const rpId = (input.rpId ?? (named[0] ? hostOf(named[0]) : 'localhost')).toLowerCase();
  const derivedOrigins = [
    ...new Set(
      named
        .filter((a) => within(hostOf(a), rpId))
        .map((a) => {
          const port = portOf(a);
          return `https://${hostOf(a)}${port === '443' ? '' : `:${port}`}`;
        }),
    ),
  ];
  const site: WebauthnSite = {
    rpId,
    origins: input.origins && input.origins.length > 0 ? input.origins : derivedOrigins,
  };
  // The configuration checks origins against a configured rpId; a derived one is known only now.
  const stray = site.origins.find((o) => !within(new URL(o).hostname, rpId));
  if (stray) throw new Error(`${ORIGINS_SETTING}: ${stray} is not ${rpId} or under it (the rpId)`);

  /** Why passkeys cannot work for a request to `requestHost` (the Host header), or undefined. */
  function unavailableReason(requestHost: string): string | undefined {
    const host = hostOf(requestHost);
    if (isIP(host) !== 0) {
      return `passkeys need a DNS name, not the IP address ${host}: use https://${rpId}…, or set ${RP_SETTING}`;
    }
    if (!within(host, rpId)) {
      return `passkeys belong to ${rpId}, which ${host} is not under: use that name, or set ${RP_SETTING}`;
    }
    if (rpId !== 'localhost' && !input.trustedTls) {
      return (
        `passkeys for ${rpId} need a server certificate browsers trust: configure tls.cert ` +
        `(SVC_TLS_CERT), or use ${RP_SETTING} localhost`
      );
    }
    // Every ceremony checks the page's origin against this list: a page served elsewhere always fails.
    const origin = `https://${requestHost.trim().toLowerCase().replace(/:443$/, '')}`;
    if (!site.origins.includes(origin)) {
      return `${origin} is not one of the passkey origins (${site.origins.join(', ') || 'none'}): add it to ${ORIGINS_SETTING}`;
    }
    return undefined;
  }

  /** Whether a browser at `requestHost` (the Host header) can use passkeys (else pages do not offer them). */
  const isAvailable = (requestHost: string) => unavailableReason(requestHost) === undefined;

  /** 409 PASSKEYS_UNAVAILABLE, naming the setting to change, when a browser would refuse. */
  function assertAvailable(requestHost: string): void {
    const reason = unavailableReason(requestHost);
    if (reason) throw new AppError('PASSKEYS_UNAVAILABLE', { message: reason });
  }

  return {
    /** The configured or derived site, whatever the request. */
    site,
    unavailableReason,
    isAvailable,
    assertAvailable,
    /**
     * The site a request to `requestHost` (the Host header) runs its ceremony for, the same on
     * every listener; 409 PASSKEYS_UNAVAILABLE when a browser there would refuse it.
     */
    siteFor(requestHost: string): WebauthnSite {
      assertAvailable(requestHost);
      return site;
    },
  };
}

export type WebauthnSettings = ReturnType<typeof createWebauthnSettings>;
