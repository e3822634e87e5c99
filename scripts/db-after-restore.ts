import { runAfterRestore } from '../src/run-after-restore.js';

/**
 * `npm run db:after-restore`: after restoring a backup, before starting any controller, ends every
 * session and token issued before the restore (docs/operations.md, "Backups").
 */
await runAfterRestore();
