import type { Db } from '../db/create-database.js';
import { hashTokenId } from '../crypto/token-id-hash.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import type { StoredOidcPayload } from './oidc-payloads-repository.js';

/** The device code as one poll found it, with the verdict on that poll's timing. */
export interface PolledDeviceCode extends StoredOidcPayload {
  /** The poll came earlier than the interval allows (less the jitter): `slow_down`. */
  tooEarly: boolean;
  /** The interval the device must keep from now on, in seconds. */
  interval: number;
}

/*
 * One statement per poll, whichever instance it reaches: every SET expression reads the row as it
 * was before this poll (PostgreSQL evaluates them against the old row, and a concurrent poll of the
 * same code waits for the row lock and then reads the newer row), so the verdict, the new interval
 * and the poll time are decided together. The verdict is returned through its column because
 * RETURNING sees only the new row.
 */
const TOO_EARLY = `(polled_at IS NOT NULL AND polled_at > ?::timestamptz - make_interval(secs => COALESCE(poll_interval, ?) - ?))`;
const POLL = fixedStatement(`UPDATE oidc_payloads
   SET polled_too_early = ${TOO_EARLY},
       poll_interval = CASE WHEN ${TOO_EARLY} THEN COALESCE(poll_interval, ?) + ? ELSE COALESCE(poll_interval, ?) END,
       polled_at = ?
 WHERE model = 'DeviceCode' AND id = ? AND (expires_at IS NULL OR expires_at > ?)
   AND COALESCE(payload->'deviceInfo'->>'issuer', ?) = ?
RETURNING payload, consumed_at, polled_too_early, poll_interval`);

/*
 * The device code is consumed, and in the same statement its login's rows (Grant, facts, API
 * session) are made to last at least as long as the access token being issued, and the API
 * session takes the polling device's address: the login itself happened in the person's browser.
 * Written in the order a code exchange writes them (oidc_payloads, then api_sessions).
 */
const CONSUME = fixedStatement(`WITH consumed AS (
  UPDATE oidc_payloads SET consumed_at = ?
   WHERE model = 'DeviceCode' AND id = ? AND consumed_at IS NULL
  RETURNING grant_id
), login_rows AS (
  UPDATE oidc_payloads SET expires_at = GREATEST(expires_at, ?)
   WHERE model IN ('Grant', 'SvcLogin') AND id IN (SELECT grant_id FROM consumed)
  RETURNING model, uid
), api_session AS (
  UPDATE api_sessions SET expires_at = GREATEST(expires_at, ?), ip_address = ?
   WHERE id IN (SELECT uid FROM login_rows WHERE model = 'SvcLogin')
)
SELECT count(*)::int AS n FROM consumed`);

/*
 * The person's side saves a device code it found by its user code (the device code is stored only
 * as its hash, so it cannot be named otherwise). Once the person has signed in, the code names its
 * grant, and the login's rows then last until `loginEnd` at least: the device may poll any time
 * before its code expires.
 */
const SAVE_BY_USER_CODE = fixedStatement(`WITH saved AS (
  UPDATE oidc_payloads SET payload = ?, grant_id = ?, account_id = ?
   WHERE model = 'DeviceCode' AND user_code = ?
  RETURNING grant_id
), login_rows AS (
  UPDATE oidc_payloads SET expires_at = GREATEST(expires_at, ?)
   WHERE model IN ('Grant', 'SvcLogin') AND id IN (SELECT grant_id FROM saved)
  RETURNING model, uid
), api_session AS (
  UPDATE api_sessions SET expires_at = GREATEST(expires_at, ?)
   WHERE id IN (SELECT uid FROM login_rows WHERE model = 'SvcLogin')
)
SELECT count(*)::int AS n FROM saved`);

interface PollRow {
  payload: Record<string, unknown> | string;
  consumed_at: Date | null;
  polled_too_early: boolean | null;
  poll_interval: number | null;
}

/** The device authorization grant's writes on the device codes in `oidc_payloads` (RFC 8628). */
export const devicePollsRepository = {
  /**
   * Records one poll of a device code and reads the code in the same statement; undefined (and
   * nothing recorded) when the code is unknown, expired before `readableAfter`, or was asked for
   * at another issuer than `issuer` (a code stored without one is polled anywhere). A poll sooner
   * than `interval - jitter` seconds after the previous one is too early, and the interval then
   * grows by `step` seconds.
   */
  async poll(
    db: Db,
    id: string,
    at: Date,
    readableAfter: Date,
    issuer: string,
    rule: { interval: number; jitter: number; step: number },
  ): Promise<PolledDeviceCode | undefined> {
    // TOO_EARLY appears twice in the statement (the verdict, then the new interval): its three
    // parameters are bound once for each.
    const tooEarly = [at, rule.interval, rule.jitter];
    const [row] = await runFixed<PollRow>(db, POLL, [
      ...tooEarly, // polled_too_early = TOO_EARLY
      ...tooEarly, // poll_interval = CASE WHEN TOO_EARLY
      rule.interval, // THEN COALESCE(poll_interval, ?)
      rule.step, // + ?
      rule.interval, // ELSE COALESCE(poll_interval, ?)
      at, // polled_at
      hashTokenId(id),
      readableAfter, // expires_at > ?
      issuer, // COALESCE(the stored issuer, ?)
      issuer, // = ?
    ]);
    if (!row) return undefined;
    return {
      payload: typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload,
      consumedAt: row.consumed_at,
      tooEarly: row.polled_too_early === true,
      interval: row.poll_interval ?? rule.interval,
    };
  },

  /**
   * Saves a device code found by its user code. A code removed meanwhile (past the janitor's
   * margin) is not saved, and nothing else is: the device's next poll finds no code.
   */
  async saveByUserCode(
    db: Db,
    userCode: string,
    saved: { payload: Record<string, unknown>; grantId: string | null; accountId: string | null },
    loginEnd: Date,
  ): Promise<void> {
    await runFixed<{ n: number }>(db, SAVE_BY_USER_CODE, [
      JSON.stringify(saved.payload),
      saved.grantId ? hashTokenId(saved.grantId) : null,
      saved.accountId,
      userCode,
      loginEnd,
      loginEnd,
    ]);
  },

  /**
   * Consumes a device code in ONE conditional statement (of parallel polls exactly one wins), with
   * its login's rows lasting until `loginEnd` at least and its API session moved to `ipAddress`;
   * false when it was gone or already consumed.
   */
  async consume(db: Db, id: string, at: Date, loginEnd: Date, ipAddress: string | null): Promise<boolean> {
    const [row] = await runFixed<{ n: number }>(db, CONSUME, [
      at,
      hashTokenId(id),
      loginEnd,
      loginEnd,
      ipAddress,
    ]);
    return Number(row!.n) > 0;
  },
};
