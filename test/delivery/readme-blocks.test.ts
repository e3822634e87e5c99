// Runs the shell blocks of README.md that are marked runnable, in order, as a newcomer would type
// them, so that the quickstart stays true.
//
// Convention in README.md: an HTML comment on the line right before a ```sh block.
//   <!-- runnable -->          the block runs with `bash -e -o pipefail` and must exit 0;
//   <!-- runnable: server -->  the block starts the service: it runs in the background until the
//                              service logs that it listens, and is stopped (SIGTERM to its
//                              process group) when the test ends.
// Blocks without a marker are not run (`npm test` itself, docker compose: no container engine here).
//
// What differs from a newcomer's terminal, and why:
// - The directory is a fresh temporary one holding links to the checkout's package.json, sources,
//   node_modules and dist: `./data` starts empty and the checkout's `.env` and data stay untouched.
// - The service listens on a free port (`SVC_ADDRESS=127.0.0.1:<port>`) and `:1280` in the blocks
//   becomes that port: other test files and a developer's own controller run beside this one.
// - `npm install` / `npm ci` without arguments do nothing: the dependencies are installed, and a
//   test must not change them.
// - curl reads a .curlrc with `fail-with-body`: an HTTP error status fails the block, so a typo in
//   a path fails the test, not only a typo in a command.
// - Placeholders a reader copies from earlier output are filled in: `<password>` with the password
//   `npm start` printed, `<token>` with the last `"token"` a previous block printed. Any other
//   `<…>` placeholder in a runnable block fails the test.
// - HOME and XDG_CONFIG_HOME are the temporary directory (`svc login` keeps its session there).
//
// The quickstart uses the embedded database, so the test runs on the PGlite leg of CI only.
import { afterAll, describe, expect, test } from '@jest/globals';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../helpers/spawn-controller.js';
import { BINARIES, testNeeding } from '../helpers/system-binaries.js';
import { waitFor } from '../helpers/wait-for.js';

const root = resolve(process.cwd());
const README_PORT = '1280';
const FENCE = '`'.repeat(3);

interface ReadmeBlock {
  kind: 'run' | 'server';
  code: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
}

/** The ```sh blocks right after a `<!-- runnable -->` or `<!-- runnable: server -->` line. */
function runnableBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = /^<!--\s*runnable(?::\s*(\w+))?\s*-->\s*$/.exec(lines[i]!);
    if (!marker) continue;
    const kind = marker[1] ?? 'run';
    if (kind !== 'run' && kind !== 'server') throw new Error(`README.md:${i + 1}: unknown marker "${kind}"`);
    if (lines[i + 1]?.trim() !== `${FENCE}sh`) {
      throw new Error(`README.md:${i + 1}: a marker must precede a ${FENCE}sh block`);
    }
    const end = lines.findIndex((l, j) => j > i + 1 && l.trim() === FENCE);
    if (end < 0) throw new Error(`README.md:${i + 2}: unclosed block`);
    blocks.push({ kind, code: lines.slice(i + 2, end).join('\n'), line: i + 2 });
    i = end;
  }
  return blocks;
}

/** Fills in what a reader copies from earlier output; refuses any other placeholder. */
function fillPlaceholders(code: string, values: Record<string, string | undefined>, at: string): string {
  return code.replace(/<([a-z][a-z ]*)>/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${at}: no value for the placeholder ${whole}`);
    return value;
  });
}

const onPglite = !process.env.TEST_DATABASE_URL;
if (!onPglite) {
  console.log('readme-blocks: the README quickstart uses the embedded database; it runs on the PGlite leg');
}

describe('README.md shell blocks', () => {
  const work = mkdtempSync(join(tmpdir(), 'svc-readme-'));
  let server: ChildProcess | undefined;
  let serverExited: Promise<void> = Promise.resolve();
  let serverOutput = '';

  afterAll(async () => {
    if (server?.pid !== undefined && server.exitCode === null && server.signalCode === null) {
      process.kill(-server.pid, 'SIGTERM');
      const killer = setTimeout(() => {
        try {
          process.kill(-server!.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 30_000);
      await serverExited;
      clearTimeout(killer);
    }
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test('the markers are found: the server block first, then blocks that use it', () => {
    const blocks = runnableBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(blocks.map((b) => b.kind)[0]).toBe('server');
    expect(blocks.filter((b) => b.kind === 'server')).toHaveLength(1);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
  });

  testNeeding([BINARIES.curl], onPglite ? test : test.skip)(
    'every runnable block runs and exits 0 against the service started as the README says',
    async () => {
      const blocks = runnableBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
      const port = String(await freePort());

      // A fresh directory that `npm start` and `npx svc` treat as the checkout.
      mkdirSync(join(root, 'dist'), { recursive: true }); // the link must point at a directory
      for (const name of [
        'package.json',
        'tsconfig.json',
        'tsconfig.build.json',
        'node_modules',
        'src',
        'migrations',
        'seeds',
        'bin',
        'dist',
      ]) {
        symlinkSync(join(root, name), join(work, name));
      }
      const shims = join(work, '.shims');
      mkdirSync(shims);
      const realNpm = execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim();
      writeFileSync(
        join(shims, 'npm'),
        `#!/bin/sh\n` +
          `if [ $# -eq 1 ] && { [ "$1" = install ] || [ "$1" = i ] || [ "$1" = ci ]; }; then\n` +
          `  echo "readme test: dependencies are installed, skipping npm $1"; exit 0\n` +
          `fi\n` +
          `exec '${realNpm}' "$@"\n`,
      );
      chmodSync(join(shims, 'npm'), 0o755);
      writeFileSync(join(work, '.curlrc'), 'fail-with-body\nshow-error\nsilent\n');
      const env: Record<string, string> = {
        PATH: `${shims}:${process.env.PATH}`,
        HOME: work,
        XDG_CONFIG_HOME: join(work, '.config'),
        CURL_HOME: work,
        LANG: 'C.UTF-8',
        NPM_CONFIG_UPDATE_NOTIFIER: 'false',
        NPM_CONFIG_FUND: 'false',
        NPM_CONFIG_AUDIT: 'false',
      };

      const values: Record<string, string | undefined> = {};
      const transcript: string[] = [];
      for (const block of blocks) {
        const at = `README.md:${block.line}`;
        const script = fillPlaceholders(block.code, values, at).replaceAll(`:${README_PORT}`, `:${port}`);
        if (block.kind === 'server') {
          server = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
            cwd: work,
            env: { ...env, SVC_ADDRESS: `127.0.0.1:${port}` },
            detached: true,
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          server.stdout!.on('data', (d) => (serverOutput += d));
          server.stderr!.on('data', (d) => (serverOutput += d));
          serverExited = new Promise((done) => server!.on('exit', () => done()));
          // A checkout without dist/ builds it first: minutes on a loaded machine, seconds in CI.
          await waitFor(
            () => {
              if (server!.exitCode !== null)
                throw new Error(`${at} exited ${server!.exitCode}:\n${serverOutput}`);
              return serverOutput.includes('controller listening');
            },
            { timeout: 240_000, interval: 200, what: `${at} to listen:\n${serverOutput}` },
          ).catch((err: Error) => {
            throw new Error(`${err.message}\n${serverOutput}`);
          });
          values.password = /password "([^"]+)"/.exec(serverOutput)?.[1];
          continue;
        }
        const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
          (done) =>
            execFile(
              'bash',
              ['-e', '-o', 'pipefail', '-c', script],
              { cwd: work, env, timeout: 90_000, maxBuffer: 4 << 20 },
              (err, out, errOut) =>
                done({ stdout: out, stderr: errOut, code: err ? ((err as { code?: number }).code ?? 1) : 0 }),
            ),
        );
        transcript.push(`$ ${at}\n${stdout}${stderr}`);
        if (code !== 0) {
          throw new Error(`${at} failed (exit ${code}):\n${script}\n--- output\n${stdout}${stderr}`);
        }
        const tokens = [...stdout.matchAll(/"token"\s*:\s*"([^"]+)"/g)];
        if (tokens.length > 0) values.token = tokens.at(-1)![1];
      }
      expect(server?.exitCode).toBeNull(); // the service stayed up through every block
      // npm start runs on the Node.js the project pins (a dev dependency), an LTS oidc-provider supports.
      expect(serverOutput).not.toContain('Unsupported runtime');
      expect(transcript.length).toBe(blocks.length - 1);
    },
    300_000,
  );
});
