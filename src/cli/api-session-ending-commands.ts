import { CliError, UsageError } from './cli-error.js';
import { out } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { resolveIdentity } from './identity-commands.js';
import { withSessionApi } from './session-client.js';

const MGMT = '/edge/management/v1';

/** A 404 of the API, said in the words of what was asked for. */
function notFoundAs(message: string) {
  return (err: unknown): never => {
    if (err instanceof CliError && err.message.includes('(NOT_FOUND')) throw new CliError(message);
    throw err;
  };
}

async function endSession(ctx: CommandContext): Promise<void> {
  const id = ctx.positionals[0]!;
  await withSessionApi(ctx.io, (api) =>
    api
      .delete(`${MGMT}/api-sessions/${encodeURIComponent(id)}`)
      .catch(notFoundAs(`no API session has the id "${id}"`)),
  );
  if (ctx.json) out(ctx.io, JSON.stringify({ id, ended: true }));
  else out(ctx.io, `Ended API session ${id}`);
}

/** Every session of an identity (e.g. of a stolen device); the identity may still log in. */
async function endSessionsOf(ctx: CommandContext): Promise<void> {
  const nameOrId = stringOption(ctx.values, 'identity');
  if (!nameOrId) throw new UsageError('svc edge delete api-sessions needs --identity <name|id>');
  const target = await withSessionApi(ctx.io, async (api) => {
    const identity = await resolveIdentity(api, nameOrId);
    await api
      .delete(`${MGMT}/identities/${encodeURIComponent(identity.id)}/api-sessions`)
      .catch(notFoundAs(`no identity is named "${nameOrId}" or has that id`));
    return identity;
  });
  if (ctx.json) out(ctx.io, JSON.stringify({ identityId: target.id, ended: true }));
  else out(ctx.io, `Ended every API session of identity ${target.name ?? nameOrId} (id ${target.id})`);
}

export const apiSessionEndingCommands: CommandSpec[] = [
  {
    words: ['edge', 'delete', 'api-session'],
    args: '<id>',
    summary: 'end one API session (legacy or OIDC) on every instance',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    run: endSession,
  },
  {
    words: ['edge', 'delete', 'api-sessions'],
    args: '--identity <name|id>',
    summary: 'end every API session of an identity (it may log in again: disable or delete it too)',
    options: { identity: { type: 'string' } },
    optionHelp: [['--identity <name|id>', 'the identity whose sessions end (required)']],
    positionals: { min: 0, max: 0 },
    run: endSessionsOf,
  },
];
