import { out, outputWidth } from './cli-io.js';
import type { CommandContext, CommandSpec } from './command-spec.js';
import { listAll, withSessionApi } from './session-client.js';
import { formatTable } from './table.js';

const API_SESSIONS = '/edge/management/v1/api-sessions';

interface ApiSessionItem {
  id: string;
  identity: { id: string; name: string };
  kind: string;
  authMethod: string | null;
  ipAddress: string | null;
  lastActivityAt: string;
  expiresAt: string;
}

async function listApiSessions(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const items = await listAll<ApiSessionItem>(api, API_SESSIONS, ctx.positionals[0]);
    if (ctx.json) return out(ctx.io, JSON.stringify(items, null, 2));
    const rows = items.map((s) => [
      s.id,
      s.identity.name,
      s.kind,
      s.authMethod ?? '',
      s.ipAddress ?? '',
      s.lastActivityAt,
      s.expiresAt,
    ]);
    out(
      ctx.io,
      formatTable(['ID', 'IDENTITY', 'KIND', 'METHOD', 'ADDRESS', 'LAST ACTIVITY', 'EXPIRES AT'], rows, {
        width: outputWidth(ctx.io),
      }),
    );
    out(ctx.io, `results: ${items.length}`);
  });
}

export const apiSessionListCommands: CommandSpec[] = [
  {
    words: ['edge', 'list', 'api-sessions'],
    args: "['<filter>']",
    summary: 'list live API sessions, e.g. svc edge list api-sessions \'kind = "oidc"\'',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 1 },
    run: listApiSessions,
  },
];
