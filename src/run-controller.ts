import { ConfigError, loadConfig } from './config/load-config.js';
import { createApp } from './app.js';

/** `npm start` and `svc controller run`: load config, start, stop cleanly on SIGTERM/SIGINT. */
export async function runController(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const app = await createApp(config);
  if (app.admin.generatedPassword) {
    // Printed once, outside the structured log, so it does not linger in log storage.
    process.stdout.write(
      `\nFirst admin created: username "${app.admin.username}", password "${app.admin.generatedPassword}"\n` +
        `It is not shown again; set SVC_ADMIN_PASSWORD to choose it yourself.\n\n`,
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const graceSeconds = app.config.server.shutdownGracePeriod;
    app.logger.info({ signal, gracePeriodSeconds: graceSeconds }, 'stopping: finishing in-flight requests');
    // The exit is promised within the grace period, whatever a stuck cleanup does.
    setTimeout(() => {
      app.logger.error({ gracePeriodSeconds: graceSeconds }, 'shutdown grace period over: exiting');
      process.exit(1);
    }, graceSeconds * 1000).unref();
    app.shutdown().then(
      () => {
        app.logger.info('stopped');
        process.exit(0);
      },
      (err) => {
        app.logger.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
