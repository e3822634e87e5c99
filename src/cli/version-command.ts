import { controllerVersion } from '../version.js';
import { out } from './cli-io.js';
import type { CommandSpec } from './command-spec.js';

/**
 * `svc version` and `svc --version`: the release this `svc` belongs to, read locally, so it
 * answers without a controller or a session. A controller's own release is for admins to ask
 * (`GET /edge/management/v1/version`).
 */
export const versionCommand: CommandSpec = {
  words: ['version'],
  args: '',
  summary: 'print the release of svc (also: svc --version)',
  options: {},
  optionHelp: [],
  positionals: { min: 0, max: 0 },
  async run({ io, json }) {
    out(io, json ? JSON.stringify({ version: controllerVersion }) : controllerVersion);
  },
};
