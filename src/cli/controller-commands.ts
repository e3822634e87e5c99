import { spawn } from 'node:child_process';
import type { CommandSpec } from './command-spec.js';
import { missingNodeOptions } from '../node-heap-options.js';

/**
 * The controller with the heap options in a child process of this one (the same command line,
 * the options added): V8 takes heap limits only when a process starts. Signals are passed on;
 * this process exits with the child, with its exit code.
 */
function rerunWith(options: string[]): Promise<void> {
  const child = spawn(process.execPath, [...process.execArgv, ...options, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on('SIGTERM', forward('SIGTERM'));
  process.on('SIGINT', forward('SIGINT'));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // Whatever the CLI would return after the command, the child's code is the answer.
    child.once('exit', (code) => resolve(process.exit(code ?? 1)));
  });
}

export const controllerCommands: CommandSpec[] = [
  {
    words: ['controller', 'run'],
    args: '',
    summary: 'run the controller in the foreground (same as npm start; configured by SVC_* variables)',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 0 },
    async run() {
      const missing = missingNodeOptions(process.execArgv, process.env.NODE_OPTIONS);
      if (missing.length > 0) return rerunWith(missing);
      // Imported on demand: the server's modules (database, OIDC) are not needed by client commands.
      const { runController } = await import('../run-controller.js');
      await runController();
    },
  },
  {
    words: ['controller', 'after-restore'],
    args: '',
    summary: 'after a restore, before starting: end every session and token issued before it',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 0 },
    async run() {
      const { runAfterRestore } = await import('../run-after-restore.js');
      await runAfterRestore();
    },
  },
];
