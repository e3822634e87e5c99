/** What one delivery attempt got back. */
export interface OutboundResponse {
  status: number;
  /** At most the first 64 KiB of the body were read; the rest was discarded. */
  bodyPreview: string;
  durationMs: number;
}

export interface OutboundPostOptions {
  /** webhooks.allowPrivateTargets */
  allowPrivateTargets: boolean;
  /** PEM certificates trusted in addition to the system trust store (webhooks.ca). */
  extraCa?: string;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

/**
 * POSTs `body` to `url` with `headers`. Resolves with the response (any status); rejects with an
 * Error whose message says why no response came (refused target, timeout, TLS, connection).
 */
export type OutboundPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
) => Promise<OutboundResponse>;

/** Placeholder until the outbound module lands: refuses every call. */
export function createOutboundPost(options: OutboundPostOptions): OutboundPost {
  void options;
  return async () => {
    throw new Error('webhook delivery is not available yet');
  };
}
