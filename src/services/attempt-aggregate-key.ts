import { clientAddressKey } from './auth/client-address-key.js';

/** The fields of a failed or refused attempt that decide which aggregated row counts it. */
export interface AttemptFields {
  event: string;
  outcome?: string;
  method?: string;
  identityId?: string;
  sourceAddress?: string;
}

/**
 * What one aggregated row of failed or refused attempts stands for within its minute: event,
 * outcome, method, the identity (none for a name that names no identity, so that every unknown
 * username of an address shares one row) and the client address as the per-address limits count
 * it (`clientAddressKey`: an IPv6 client by its /64), so that varying the username or the address
 * within one's own network costs no rows (docs/operations.md, "Audit events").
 */
export function attemptAggregateKey(e: AttemptFields): string[] {
  return [
    e.event,
    e.outcome ?? '',
    e.method ?? '',
    e.identityId === undefined ? '' : `i:${e.identityId}`,
    e.sourceAddress === undefined ? '' : clientAddressKey(e.sourceAddress),
  ];
}
