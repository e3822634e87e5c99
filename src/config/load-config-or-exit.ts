import { ConfigError, loadConfig, type Config } from './load-config.js';

/**
 * The configuration of an entry point (`npm start`, the restore step, `db:migrate`): a bad
 * setting is one line on stderr and exit code 2, never a stack trace.
 */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}
