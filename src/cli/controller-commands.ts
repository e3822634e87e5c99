import type { CommandSpec } from './command-spec.js';

export const controllerCommands: CommandSpec[] = [
  {
    words: ['controller', 'run'],
    args: '',
    summary: 'run the controller in the foreground (same as npm start; configured by SVC_* variables)',
    options: {},
    optionHelp: [],
    positionals: { min: 0, max: 0 },
    async run() {
      // Imported on demand: the server's modules (database, OIDC) are not needed by client commands.
      const { runController } = await import('../run-controller.js');
      await runController();
    },
  },
];
