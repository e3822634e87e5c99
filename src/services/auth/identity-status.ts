import type { Identity } from '../../repositories/identities-repository.js';

/** Disabled until an admin enables it (no end), or until `disabledUntil` has passed. */
export function isDisabled(identity: Pick<Identity, 'disabled' | 'disabledUntil'>, now: Date): boolean {
  return identity.disabled && (identity.disabledUntil === null || identity.disabledUntil > now);
}
