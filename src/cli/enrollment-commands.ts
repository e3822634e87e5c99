import { UsageError } from './cli-error.js';
import { out } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { filterString, listAll, withSessionApi } from './session-client.js';

const ENROLLMENTS = '/edge/management/v1/enrollments';

interface EnrollmentSummary {
  id: string;
  method: string;
}

async function deleteEnrollment(ctx: CommandContext): Promise<void> {
  const id = ctx.positionals[0]!;
  await withSessionApi(ctx.io, (api) => api.delete(`${ENROLLMENTS}/${encodeURIComponent(id)}`));
  if (ctx.json) out(ctx.io, JSON.stringify({ id, deleted: true }));
  else out(ctx.io, `Deleted enrollment ${id}`);
}

/**
 * The second step after `create identity`: an identity created with its default certificate (ott)
 * enrollment loses it here, e.g. to authenticate by external JWT only.
 */
async function deleteEnrollmentsOf(ctx: CommandContext): Promise<void> {
  const identityId = stringOption(ctx.values, 'identity');
  if (!identityId) throw new UsageError('svc edge delete enrollments needs --identity <id>');
  const deleted = await withSessionApi(ctx.io, async (api) => {
    // An unknown identity is an error (404), not "nothing to delete".
    await api.get(`/edge/management/v1/identities/${encodeURIComponent(identityId)}`);
    const items = await listAll<EnrollmentSummary>(
      api,
      ENROLLMENTS,
      `identityId = ${filterString(identityId)}`,
    );
    for (const e of items) await api.delete(`${ENROLLMENTS}/${encodeURIComponent(e.id)}`);
    return items;
  });
  if (ctx.json)
    return out(ctx.io, JSON.stringify({ identityId, deleted: deleted.map((e) => e.id) }, null, 2));
  for (const e of deleted) out(ctx.io, `Deleted ${e.method} enrollment ${e.id}`);
  out(ctx.io, `${deleted.length} enrollment(s) of identity ${identityId} deleted`);
}

export const enrollmentCommands: CommandSpec[] = [
  {
    words: ['edge', 'delete', 'enrollment'],
    args: '<id>',
    summary: 'delete one enrollment',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    run: deleteEnrollment,
  },
  {
    words: ['edge', 'delete', 'enrollments'],
    args: '--identity <id>',
    summary: 'delete every enrollment of an identity (spec rule 7)',
    options: { identity: { type: 'string' } },
    optionHelp: [['--identity <id>', 'the identity whose enrollments go (required)']],
    positionals: { min: 0, max: 0 },
    run: deleteEnrollmentsOf,
  },
];
