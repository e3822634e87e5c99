import { resolve } from 'node:path';
import type { ApiClient } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { out, outputWidth } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec, type OptionValues } from './command-spec.js';
import { filterString, listAll, withSessionApi } from './session-client.js';
import { writePrivateFile } from './session-store.js';
import { formatTable } from './table.js';

const IDENTITIES = '/edge/management/v1/identities';
const TYPES: Record<string, string> = { device: 'Device', service: 'Service', user: 'User' };

interface IdentitySummary {
  id: string;
  name: string;
  type: string;
  isAdmin: boolean;
}

type Enrollment = { ott: true } | { ottca: string } | { updb: string };

/**
 * An `ott` enrollment unless `--updb` says otherwise, so a new identity always has a way in;
 * `--no-enrollment` and `--ottca` are there for identities that log in another way (docs/cli.md).
 */
function enrollmentFrom(values: OptionValues): Enrollment | undefined {
  const updb = stringOption(values, 'updb');
  const ottca = stringOption(values, 'ottca');
  const chosen = [updb !== undefined, ottca !== undefined, values['no-enrollment'] === true];
  if (chosen.filter(Boolean).length > 1) {
    throw new UsageError('choose at most one of --updb, --ottca and --no-enrollment');
  }
  if (updb !== undefined) return { updb };
  if (ottca !== undefined) return { ottca };
  return values['no-enrollment'] ? undefined : { ott: true };
}

function createBody(ctx: CommandContext) {
  const [typeWord, name] = ctx.positionals as [string, string];
  const type = TYPES[typeWord.toLowerCase()];
  if (!type) throw new UsageError(`unknown identity type "${typeWord}": use device, service or user`);
  const roles = stringOption(ctx.values, 'role-attributes');
  return {
    name,
    type,
    isAdmin: ctx.values.admin === true,
    enrollment: enrollmentFrom(ctx.values),
    externalId: stringOption(ctx.values, 'external-id'),
    authPolicyId: stringOption(ctx.values, 'auth-policy'),
    roleAttributes:
      roles === undefined
        ? undefined
        : roles
            .split(',')
            .map((r) => r.trim())
            .filter(Boolean),
  };
}

/** Writes the enrollment JWT of the identity detail to `file`, mode 0600. */
async function writeEnrollmentJwt(ctx: CommandContext, api: ApiClient, id: string, file: string) {
  const { data } = await api.get<{ enrollment?: Record<string, { jwt: string; expiresAt: string }> }>(
    `${IDENTITIES}/${encodeURIComponent(id)}`,
  );
  const enrollment = Object.values(data.enrollment ?? {})[0];
  if (!enrollment) throw new CliError(`identity ${id} was created but has no enrollment to write`);
  const path = resolve(ctx.io.cwd, file);
  writePrivateFile(path, enrollment.jwt);
  return { path, expiresAt: enrollment.expiresAt };
}

async function createIdentity(ctx: CommandContext): Promise<void> {
  const body = createBody(ctx);
  const jwtFile = stringOption(ctx.values, 'output');
  if (jwtFile !== undefined && !body.enrollment)
    throw new UsageError('-o needs an enrollment: drop --no-enrollment');
  await withSessionApi(ctx.io, async (api) => {
    const { data } = await api.post<{ id: string }>(IDENTITIES, { body });
    const written = jwtFile === undefined ? undefined : await writeEnrollmentJwt(ctx, api, data.id, jwtFile);
    if (ctx.json) {
      out(ctx.io, JSON.stringify({ ...data, ...(written ? { jwtFile: written.path } : {}) }, null, 2));
      return;
    }
    out(ctx.io, `New identity ${body.name} created, id: ${data.id}`);
    if (written) out(ctx.io, `Enrollment JWT written to ${written.path}; it expires at ${written.expiresAt}`);
  });
}

async function listIdentities(ctx: CommandContext): Promise<void> {
  await withSessionApi(ctx.io, async (api) => {
    const items = await listAll<IdentitySummary>(api, IDENTITIES, ctx.positionals[0]);
    if (ctx.json) return out(ctx.io, JSON.stringify(items, null, 2));
    const rows = items.map((i) => [i.id, i.name, i.type, String(i.isAdmin)]);
    out(ctx.io, formatTable(['ID', 'NAME', 'TYPE', 'IS ADMIN'], rows, { width: outputWidth(ctx.io) }));
    out(ctx.io, `results: ${items.length}`);
  });
}

/** A name is looked up first (names are what people type); failing that the argument is an id. */
export async function resolveIdentity(
  api: ApiClient,
  nameOrId: string,
): Promise<{ id: string; name?: string }> {
  const byName = await listAll<IdentitySummary>(api, IDENTITIES, `name = ${filterString(nameOrId)}`);
  if (byName[0]) return byName[0];
  return { id: nameOrId };
}

async function deleteIdentity(ctx: CommandContext): Promise<void> {
  const nameOrId = ctx.positionals[0]!;
  await withSessionApi(ctx.io, async (api) => {
    const target = await resolveIdentity(api, nameOrId);
    try {
      await api.delete(`${IDENTITIES}/${encodeURIComponent(target.id)}`);
    } catch (err) {
      if (err instanceof CliError && err.message.includes('(NOT_FOUND')) {
        throw new CliError(`no identity is named "${nameOrId}" or has that id`);
      }
      throw err;
    }
    if (ctx.json) out(ctx.io, JSON.stringify({ id: target.id, deleted: true }));
    else out(ctx.io, `Deleted identity ${target.name ?? nameOrId} (id ${target.id})`);
  });
}

export const identityCommands: CommandSpec[] = [
  {
    words: ['edge', 'create', 'identity'],
    args: '<device|service|user> <name>',
    summary: 'create an identity, with an ott enrollment unless told otherwise',
    options: {
      admin: { type: 'boolean', short: 'A' },
      updb: { type: 'string' },
      'external-id': { type: 'string' },
      'auth-policy': { type: 'string', short: 'P' },
      'role-attributes': { type: 'string', short: 'a' },
      output: { type: 'string', short: 'o' },
      'no-enrollment': { type: 'boolean' },
      ottca: { type: 'string' },
    },
    optionHelp: [
      ['-A, --admin', 'make it an administrator'],
      ['--updb <username>', 'a password enrollment for this username instead of ott'],
      ['--ottca <ca id>', 'an enrollment by a certificate of that 3rd-party CA instead of ott'],
      ['--no-enrollment', 'no enrollment at all (e.g. external JWT login only)'],
      ['--external-id <id>', 'the id an external JWT names it by'],
      ['-P, --auth-policy <id>', 'authentication policy (default: default)'],
      ['-a, --role-attributes <a,b>', 'comma-separated role attributes'],
      ['-o, --output <file>', 'write the enrollment JWT to this file (mode 0600)'],
    ],
    positionals: { min: 2, max: 2 },
    choices: Object.keys(TYPES),
    run: createIdentity,
  },
  {
    words: ['edge', 'list', 'identities'],
    args: "['<filter>']",
    summary: 'list identities, e.g. svc edge list identities \'name contains "dev"\'',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 1 },
    run: listIdentities,
  },
  {
    words: ['edge', 'delete', 'identity'],
    args: '<name|id>',
    summary: 'delete an identity with its sessions, authenticators and enrollments',
    options: {},
    optionHelp: [],
    positionals: { min: 1, max: 1 },
    run: deleteIdentity,
  },
];
