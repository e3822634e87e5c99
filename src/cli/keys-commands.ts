import { out } from './cli-io.js';
import type { CommandContext, CommandSpec } from './command-spec.js';
import { withSessionApi } from './session-client.js';

/** The key view of `POST /keys/rotate`. */
interface RotatedKey {
  kid?: string;
  alg?: string;
  signsFrom?: string;
}

/** Publishes a new OIDC signing key now; it signs after the rotation grace, once clients have fetched it. */
async function rotateKeys(ctx: CommandContext): Promise<void> {
  const { data } = await withSessionApi(ctx.io, (api) =>
    api.post<RotatedKey>('/edge/management/v1/keys/rotate'),
  );
  if (ctx.json) return out(ctx.io, JSON.stringify(data ?? {}, null, 2));
  const key = data?.kid ? `${data.kid}${data.alg ? ` (${data.alg})` : ''}` : '';
  const from = data?.signsFrom ? ` from ${data.signsFrom}` : ' after the rotation grace';
  out(ctx.io, `New signing key ${key} published in /oidc/keys; it signs tokens${from}`.replace('  ', ' '));
}

export const keysCommands: CommandSpec[] = [
  {
    words: ['keys', 'rotate'],
    args: '',
    summary: 'rotate the OIDC token signing key',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 0 },
    run: rotateKeys,
  },
];
