import { runController } from './run-controller.js';

runController().catch((err: unknown) => {
  process.stderr.write(`svc controller failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
