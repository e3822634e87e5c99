import type { ApiClient } from './api-client.js';
import { CliError } from './cli-error.js';
import { out, outputWidth } from './cli-io.js';
import type { CommandContext, CommandSpec } from './command-spec.js';
import { filterString, listAll, withSessionApi } from './session-client.js';
import { formatTable } from './table.js';

const CAS = '/edge/management/v1/cas';

interface BlockedCertificate {
  id: string;
  fingerprint: string;
  tbsSha256: string;
  commonName: string | null;
  identityName: string;
  createdAt: string;
}

/** A CA by name first (what people type), else by id; an unknown one is an error, not an empty list. */
async function resolveCa(api: ApiClient, nameOrId: string): Promise<{ id: string; name: string }> {
  const [byName] = await listAll<{ id: string; name: string }>(api, CAS, `name = ${filterString(nameOrId)}`);
  if (byName) return byName;
  try {
    const { data } = await api.get<{ id: string; name: string }>(`${CAS}/${encodeURIComponent(nameOrId)}`);
    return data;
  } catch (err) {
    if (err instanceof CliError && err.message.includes('(NOT_FOUND')) {
      throw new CliError(`no CA is named "${nameOrId}" or has that id`);
    }
    throw err;
  }
}

const blockedPath = (caId: string) => `${CAS}/${encodeURIComponent(caId)}/blocked-certificates`;

async function listBlocked(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const ca = await resolveCa(api, ctx.positionals[0]!);
    const items = await listAll<BlockedCertificate>(api, blockedPath(ca.id), ctx.positionals[1]);
    if (ctx.json) return out(ctx.io, JSON.stringify(items, null, 2));
    const rows = items.map((b) => [b.id, b.commonName ?? '', b.identityName, b.fingerprint, b.createdAt]);
    out(
      ctx.io,
      formatTable(['ID', 'COMMON NAME', 'IDENTITY', 'FINGERPRINT (SHA-1)', 'BLOCKED AT'], rows, {
        width: outputWidth(ctx.io),
      }),
    );
    out(ctx.io, `results: ${items.length}`);
  });
}

async function unblock(ctx: CommandContext): Promise<void> {
  const [caNameOrId, entryId] = ctx.positionals as [string, string];
  await withSessionApi(ctx.io, async (api) => {
    const ca = await resolveCa(api, caNameOrId);
    await api.delete(`${blockedPath(ca.id)}/${encodeURIComponent(entryId)}`);
    if (ctx.json) out(ctx.io, JSON.stringify({ caId: ca.id, id: entryId, deleted: true }));
    else out(ctx.io, `Lifted block ${entryId} of CA ${ca.name}: the certificate may enroll again`);
  });
}

export const blockedCertificateCommands: CommandSpec[] = [
  {
    words: ['edge', 'list', 'blocked-certificates'],
    args: "<ca> ['<filter>']",
    summary: 'list the certificates of a 3rd-party CA that may not enroll again (their identity was deleted)',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 2 },
    run: listBlocked,
  },
  {
    words: ['edge', 'delete', 'blocked-certificate'],
    args: '<ca> <entry id>',
    summary: 'lift a block: the certificate may enroll again, as a new identity',
    options: {},
    optionHelp: [],
    positionals: { min: 2, max: 2 },
    run: unblock,
  },
];
