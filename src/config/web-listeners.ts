import type { ApiBindingName, ParsedConfig, WebListenerConfig } from './config-schema.js';

export interface BindingOptions {
  redirectURIs?: string[];
  postLogoutURIs?: string[];
}

export interface ListenerSpec {
  name: string;
  /** Unique `host:port` pairs to listen on. */
  interfaces: string[];
  /** The `host:port` addresses clients use; each is one OIDC issuer when edge-oidc is bound. */
  addresses: string[];
  apis: Map<ApiBindingName, BindingOptions>;
  /** Present when connections from these addresses carry a PROXY protocol header. */
  proxyProtocol?: { trustedFrom: string[] };
}

/** The account page (`/account/`) is served where a person can both sign in and use the client API. */
export const servesAccountPage = (spec: Pick<ListenerSpec, 'apis'>): boolean =>
  spec.apis.has('edge-client') && spec.apis.has('edge-oidc');

const EDGE_BINDINGS: ApiBindingName[] = ['edge-client', 'edge-management', 'edge-oidc'];

function defaultListener(config: ParsedConfig): WebListenerConfig {
  const port = config.address.slice(config.address.lastIndexOf(':') + 1);
  const addresses = config.advertisedAddress
    ? [config.advertisedAddress]
    : [`localhost:${port}`, `127.0.0.1:${port}`];
  return {
    name: 'default',
    bindPoints: addresses.map((address) => ({ interface: config.address, address })),
    apis: [{ binding: 'edge-client' }, { binding: 'edge-management' }],
    proxyProtocol: config.proxyProtocol,
  };
}

/** `metrics.address`: a listener that serves /metrics (and the health routes) and nothing else. */
function metricsListener(address: string): WebListenerConfig {
  return { name: 'metrics', bindPoints: [{ interface: address }], apis: [{ binding: 'metrics' }] };
}

function toSpec(listener: WebListenerConfig): ListenerSpec {
  const apis = new Map<ApiBindingName, BindingOptions>();
  for (const api of listener.apis) apis.set(api.binding, { ...apis.get(api.binding), ...api.options });
  const trustedFrom = listener.proxyProtocol?.trustedFrom ?? [];
  return {
    name: listener.name,
    interfaces: [...new Set(listener.bindPoints.map((b) => b.interface))],
    addresses: [...new Set(listener.bindPoints.map((b) => b.address ?? b.interface))],
    apis,
    ...(trustedFrom.length > 0 ? { proxyProtocol: { trustedFrom } } : {}),
  };
}

/**
 * Builds the listeners: the YAML `web` section replaces the
 * default listener; without an `edge` section no edge API is served; `edge-oidc` joins every
 * listener hosting `edge-client` unless auto-binding is disabled or some listener lists it.
 */
export function resolveListeners(config: ParsedConfig): ListenerSpec[] {
  const { enabled, address } = config.metrics;
  const ownListener = enabled && address ? toSpec(metricsListener(address)) : undefined;
  const listeners = (config.web ?? [defaultListener(config)]).map(toSpec);
  if (ownListener) listeners.push(ownListener);
  // Metrics: on the metrics.address listener alone when it is set, else wherever a listener lists
  // them, else on every listener; never when disabled.
  const explicitMetrics = listeners.some((l) => l.apis.has('metrics'));
  for (const l of listeners) {
    if (!enabled || (ownListener && l !== ownListener)) l.apis.delete('metrics');
    else if (!explicitMetrics) l.apis.set('metrics', {});
  }
  if (!config.edge) {
    for (const l of listeners) for (const b of EDGE_BINDINGS) l.apis.delete(b);
    return listeners;
  }
  const explicit = listeners.some((l) => l.apis.has('edge-oidc'));
  if (!explicit && !config.edge.api.disableOidcAutoBinding) {
    for (const l of listeners) if (l.apis.has('edge-client')) l.apis.set('edge-oidc', {});
  }
  return listeners;
}
