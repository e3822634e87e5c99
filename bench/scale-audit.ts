import type pg from 'pg';

/**
 * The audit event list at scale (`npm run bench -- --scale`): the trail is seeded afresh at each
 * size, in time order, one event every 7.776 s so that 1,000,000 events span the default retention
 * of 90 days and the newest is a second old; "the last hour" then holds about 460 events at any
 * size. Half the events are `auth.login`, a fifth are failures, and each identity, actor and
 * address has 100 events at any size (spread over the whole trail), so every measured page holds
 * 100 events at both sizes and only the trail's size differs.
 * Batches of 100,000 rows, one `INSERT … SELECT generate_series` each, each its own transaction
 * (a real trail has one transaction per change: the `(tx, id)` order is the same).
 */

const BATCH_ROWS = 100_000;
const SPACING_S = 7.776;
const MGMT = '/edge/management/v1';

/** A scale scenario with a target: p50 at the large size within RATIO of the small one, or under FLOOR_MS. */
export const AUDIT_TARGET = { ratio: 3, floorMs: 10 };

export function meetsAuditTarget(smallMs: number, largeMs: number): boolean {
  return largeMs <= AUDIT_TARGET.ratio * smallMs || largeMs <= AUDIT_TARGET.floorMs;
}

/** Replaces the trail with `total` events (identities, admins, addresses and outcomes spread evenly). */
export async function seedAuditEvents(
  db: pg.Client,
  total: number,
  progress: (line: string) => void,
): Promise<void> {
  await db.query('truncate audit_events');
  for (let from = 1; from <= total; from += BATCH_ROWS) {
    const to = Math.min(total, from + BATCH_ROWS - 1);
    await db.query(
      `insert into audit_events
         (occurred_at, event, outcome, identity_id, actor_id, source_address, request_id, details)
       select now() - interval '1 second' - (($2::int - i) * $4::float8 * interval '1 second'),
         case when i % 2 = 0 then 'auth.login' else
           (array['auth.second-factor', 'session.ended', 'identity.created', 'identity.updated',
                  'identity.deleted', 'policy.updated', 'enrollment.created', 'enrollment.completed',
                  'authenticator.created', 'revocation.published', 'passkey.registered',
                  'key.rotated', 'ca.updated', 'signer.updated', 'oidc.device.authorization',
                  'oidc.device.confirmed', 'mfa.removed', 'certificate.blocked',
                  'identity.disabled'])[1 + i / 2 % 19] end,
         case when i % 5 = 0 then 'failure' when i % 5 = 1 then 'success' end,
         'scale-identity-' || (i % ($2::int / 100)),
         case when i % 10 = 0 then 'scale-admin-' || (i / 10 % greatest(1, $2::int / 1000)) end,
         '10.' || (i % ($2::int / 100) / 256) || '.' || (i % ($2::int / 100) % 256) || '.1',
         md5(i::text),
         jsonb_build_object('method', 'password', 'reason', 'wrong-password')
       from generate_series($1::int, $3::int) as i`,
      [from, total, to, SPACING_S],
    );
    if (total > BATCH_ROWS) progress(`  ${to.toLocaleString('en')} audit events`);
  }
  // As autovacuum would soon do: fresh statistics and a visibility map for index-only scans.
  await db.query('vacuum analyze audit_events');
}

/**
 * The first page (limit 100) of every indexed filter, and a follower's poll that finds nothing
 * new (`after=` the head cursor of a first page, as `svc edge list audit-events --follow` polls).
 * `get` answers the body of a 200 and throws on anything else.
 */
export function auditMeasures(get: (path: string) => Promise<string>) {
  const page = (filter: string) => () =>
    get(`${MGMT}/audit-events?limit=100${filter ? `&filter=${encodeURIComponent(filter)}` : ''}`);
  let head: string | undefined;
  const follow = async () => {
    head ??= (
      JSON.parse(await get(`${MGMT}/audit-events?limit=1`)) as {
        meta: { pagination: { headCursor: string } };
      }
    ).meta.pagination.headCursor;
    return get(`${MGMT}/audit-events?after=${head}&limit=100`);
  };
  const scenarios: [string, () => Promise<string>][] = [
    ['audit events, first page (limit 100)', page('')],
    ['audit events, event =', page('event = "auth.login"')],
    ['audit events, outcome =', page('outcome = "failure"')],
    ['audit events, identityId =', page('identityId = "scale-identity-7"')],
    ['audit events, actorId =', page('actorId = "scale-admin-0"')],
    ['audit events, sourceAddress =', page('sourceAddress = "10.0.7.1"')],
    // Relative to each request: the seeded trail ends a second before the measures start.
    [
      'audit events, occurredAt: the last hour',
      () => page(`occurredAt >= "${new Date(Date.now() - 3600_000).toISOString()}"`)(),
    ],
    ['audit events, follow: a poll after the head', follow],
  ];
  return scenarios.map(([title, run]) => ({ title, samples: 100, run: () => run().then(() => undefined) }));
}
