/**
 * Whether `url` may be a webhook's target, checked when a webhook is created or changed:
 * an absolute `https:` URL without user name or password, and, unless private targets are
 * allowed, no literal address of a private, loopback, link-local, CGNAT, unique-local, multicast
 * or unspecified range (or an IPv4-mapped or NAT64 form of one). A DNS name is checked again on
 * every delivery, on the address actually connected (outbound-post.ts).
 *
 * @returns a sentence saying what is wrong, or undefined when the URL is acceptable.
 */
export function webhookUrlProblem(url: string, allowPrivateTargets: boolean): string | undefined {
  // Placeholder until the outbound checks land: https only.
  void allowPrivateTargets;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  return parsed.protocol === 'https:' ? undefined : 'must be an https: URL';
}
