import { CliError, UsageError } from './cli-error.js';
import type { CliIo } from './cli-io.js';

const MAX_STDIN_BYTES = 64 * 1024;

/** All of stdin; one trailing newline is dropped (`echo secret | svc … --password-stdin`). */
export async function readPasswordFromStdin(io: CliIo): Promise<string> {
  let text = '';
  for await (const chunk of io.stdin) {
    text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    if (text.length > MAX_STDIN_BYTES) throw new CliError('the password on stdin is too long');
  }
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new CliError('no password on stdin');
  return password;
}

/** Reads one line from the terminal without echoing it. */
function readHidden(io: CliIo, prompt: string): Promise<string> {
  const { stdin } = io;
  // Echo goes off before the prompt shows, so nothing typed after the prompt is ever echoed.
  stdin.setRawMode?.(true);
  io.stderr.write(prompt);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n' || c === '\u0004') return finish();
        if (c === '\u0003') return finish(new CliError('cancelled', 130));
        if (c === '\u007f' || c === '\b') value = value.slice(0, -1);
        else value += c;
      }
    };
    stdin.on('data', onData);
  });
}

/** Asks twice on the terminal: a mistyped new password would lock the user out. */
export async function promptNewPassword(io: CliIo): Promise<string> {
  if (!io.stdin.isTTY) {
    throw new UsageError('no terminal to ask for the password on: pass --password-stdin and pipe it in');
  }
  const first = await readHidden(io, 'New password: ');
  if (first === '') throw new CliError('the password is empty');
  const second = await readHidden(io, 'Repeat the password: ');
  if (first !== second) throw new CliError('the two passwords differ');
  return first;
}

/** The password of an existing account (login without -p). */
export async function promptPassword(io: CliIo): Promise<string> {
  if (!io.stdin.isTTY) {
    throw new UsageError('no terminal to ask for the password on: pass -p <password> or --password-stdin');
  }
  return readHidden(io, 'Password: ');
}
