import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { createApiClient, type ApiClient } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { out } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { decodeEnrollmentJwt, establishTrust, type EnrollmentClaims } from './enrollment-trust.js';
import { promptNewPassword, readPasswordFromStdin } from './password-input.js';
import { writePrivateFile } from './session-store.js';

const ENROLL = '/edge/client/v1/enroll';

interface EnrollResult {
  identityId: string;
  method: string;
  files: Record<string, string>;
  username?: string;
}

function readText(ctx: CommandContext, file: string, what: string): string {
  try {
    return readFileSync(resolve(ctx.io.cwd, file), 'utf8').trim();
  } catch (err) {
    throw new CliError(`cannot read the ${what} ${file}: ${(err as Error).message}`);
  }
}

/** Flags that do not fit the token's method are refused before the one-time token is spent. */
function checkFlags(ctx: CommandContext, claims: EnrollmentClaims): void {
  const certFlags = ctx.values.cert !== undefined || ctx.values.key !== undefined;
  if (claims.em === 'ottca' && (!ctx.values.cert || !ctx.values.key)) {
    throw new UsageError(
      'an ottca enrollment needs --cert <file> and --key <file> of the 3rd-party certificate',
    );
  }
  if (claims.em !== 'ottca' && certFlags)
    throw new UsageError(`--cert and --key are for ottca, this token is ${claims.em}`);
  if (claims.em !== 'updb' && ctx.values['password-stdin']) {
    throw new UsageError(`--password-stdin is for updb, this token is ${claims.em}`);
  }
}

function outputDir(ctx: CommandContext): string {
  const dir = resolve(ctx.io.cwd, stringOption(ctx.values, 'out') ?? '.');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** `<out>/<name>.cert.pem` etc.; the name defaults to the JWT file's name, then to the identity id. */
function credentialName(ctx: CommandContext, claims: EnrollmentClaims): string {
  const given = stringOption(ctx.values, 'name');
  if (given) return given;
  const file = basename(ctx.positionals[0]!);
  return basename(file, extname(file)) || claims.sub;
}

async function enrollOtt(ctx: CommandContext, api: ApiClient, claims: EnrollmentClaims, ca: string) {
  const dir = outputDir(ctx);
  const name = credentialName(ctx, claims);
  const certFile = join(dir, `${name}.cert.pem`);
  const keyFile = join(dir, `${name}.key.pem`);
  for (const f of [certFile, keyFile]) {
    if (existsSync(f)) throw new CliError(`${f} exists: remove it or choose another --out or --name`);
  }
  // Loaded here only: the x509 library is not needed by any other command.
  const { generateClientKeyAndCsr } = await import('../crypto/pki.js');
  const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: claims.sub });
  const { data } = await api.post<{ cert: string }>(`${ENROLL}/ott`, {
    body: { token: claims.jti, clientCsr: csrPem },
  });
  writePrivateFile(keyFile, keyPem);
  writePrivateFile(certFile, data.cert);
  writeFileSync(join(dir, 'ca.pem'), ca);
  return { certFile, keyFile, caFile: join(dir, 'ca.pem') };
}

async function enrollUpdb(ctx: CommandContext, api: ApiClient, claims: EnrollmentClaims, ca: string) {
  const password = ctx.values['password-stdin']
    ? await readPasswordFromStdin(ctx.io)
    : await promptNewPassword(ctx.io);
  const { data } = await api.post<{ username?: string }>(`${ENROLL}/updb`, {
    query: { token: claims.jti },
    body: { password },
  });
  const files: Record<string, string> = {};
  if (stringOption(ctx.values, 'out')) {
    files.caFile = join(outputDir(ctx), 'ca.pem');
    writeFileSync(files.caFile, ca);
  }
  return { files, username: data?.username };
}

async function enroll(ctx: CommandContext): Promise<void> {
  const jwt = readText(ctx, ctx.positionals[0]!, 'enrollment JWT');
  const claims = decodeEnrollmentJwt(jwt);
  checkFlags(ctx, claims);
  const { origin, ca } = await establishTrust(jwt, claims);
  const mtls =
    claims.em === 'ottca'
      ? {
          cert: readText(ctx, ctx.values.cert as string, 'certificate'),
          key: readText(ctx, ctx.values.key as string, 'key'),
        }
      : {};
  const api = createApiClient({ url: origin, ca, ...mtls });
  let result: EnrollResult;
  try {
    if (claims.em === 'ott') {
      result = { identityId: claims.sub, method: 'ott', files: await enrollOtt(ctx, api, claims, ca) };
    } else if (claims.em === 'updb') {
      result = { identityId: claims.sub, method: 'updb', ...(await enrollUpdb(ctx, api, claims, ca)) };
    } else {
      await api.post(`${ENROLL}/ottca`, { body: { token: claims.jti } });
      const caFile = join(outputDir(ctx), 'ca.pem');
      writeFileSync(caFile, ca);
      result = { identityId: claims.sub, method: 'ottca', files: { caFile } };
    }
  } finally {
    await api.close();
  }
  report(ctx, origin, result);
}

function report(ctx: CommandContext, origin: string, result: EnrollResult): void {
  if (ctx.json) return out(ctx.io, JSON.stringify({ url: origin, ...result }, null, 2));
  const how =
    result.method === 'updb'
      ? `a password${result.username ? ` (username ${result.username})` : ''}`
      : 'a certificate';
  out(ctx.io, `Enrolled identity ${result.identityId} at ${origin} with ${how}`);
  for (const [kind, path] of Object.entries(result.files))
    out(ctx.io, `  ${kind.replace(/File$/, '')}: ${path}`);
}

export const enrollCommand: CommandSpec = {
  words: ['enroll'],
  args: '<jwt file>',
  summary:
    'complete an enrollment from its JWT (ott: key + certificate; updb: password; ottca: your certificate)',
  options: {
    out: { type: 'string' },
    name: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    cert: { type: 'string' },
    key: { type: 'string' },
  },
  optionHelp: [
    ['--out <dir>', 'where to write <name>.cert.pem, <name>.key.pem and ca.pem (default: .)'],
    ['--name <name>', 'file name prefix (default: the JWT file name without extension)'],
    ['--password-stdin', 'updb: read the new password from stdin instead of the terminal'],
    ['--cert <file>, --key <file>', 'ottca: the 3rd-party certificate and its key'],
  ],
  positionals: { min: 1, max: 1 },
  run: enroll,
};
