import { loadConfigOrExit } from './config/load-config-or-exit.js';
import { createApp, type App } from './app.js';
import { webhookOverridesFromEnv } from './services/webhooks/webhook-dispatcher.js';

/**
 * `npm start` and `svc controller run`: load config, start, stop cleanly on SIGTERM/SIGINT. A
 * signal during start-up is held until the start has finished (its ports answer 503 "starting"
 * meanwhile), then the controller stops as it would once running: nothing is cut off and the data
 * directory is left unlocked. The exit still comes within the grace period, counted from the signal.
 */
export async function runController(): Promise<void> {
  const config = loadConfigOrExit();
  const graceSeconds = config.server.shutdownGracePeriod;
  const started: { app?: App } = {};
  let signalled: string | undefined;
  const stop = (running: App, signal: string) => {
    running.logger.info(
      { signal, gracePeriodSeconds: graceSeconds },
      'stopping: finishing in-flight requests',
    );
    running.shutdown().then(
      () => {
        running.logger.info('stopped');
        process.exit(0);
      },
      (err) => {
        running.logger.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    // The exit is promised within the grace period, whatever a stuck start or cleanup does.
    setTimeout(() => {
      if (started.app)
        started.app.logger.error({ gracePeriodSeconds: graceSeconds }, 'shutdown grace period over: exiting');
      else process.stderr.write(`shutdown grace period (${graceSeconds} s) over during start-up: exiting\n`);
      process.exit(1);
    }, graceSeconds * 1000).unref();
    if (started.app) stop(started.app, signal);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  const app = await createApp(config, {
    webhooks: webhookOverridesFromEnv(process.env),
    // Printed once, outside the structured log, so it does not linger in log storage.
    onGeneratedAdminPassword: ({ username, generatedPassword }) =>
      process.stdout.write(
        `\nFirst admin created: username "${username}", password "${generatedPassword}"\n` +
          `It is not shown again; set SVC_ADMIN_PASSWORD to choose it yourself.\n\n`,
      ),
  });
  started.app = app;
  if (signalled) stop(app, signalled);
}
