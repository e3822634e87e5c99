import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDatabase, type Database } from '../../src/db/create-database.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A fresh PGlite cluster costs ≈ 2.5 s of CPU (initdb inside WASM) before the migrations; a copy of
 * one that has been created and migrated once costs ≈ 0.4 s. Test servers start from such a copy;
 * the controller then finds its migrations applied and seeds as on any new database. The template
 * is keyed by the migrations' text and PGlite's version, so a changed migration builds a new one.
 */
export async function copyMigratedPglite(target: string): Promise<void> {
  cpSync(await templateDir(), target, { recursive: true });
}

/**
 * A migrated embedded database in a directory of its own, removed by `drop`. A fresh in-memory
 * PGlite would run initdb inside WASM again; two of those at once in one jest worker have been
 * seen to stall past knex's acquire timeout on a loaded machine.
 */
export async function migratedPglite(): Promise<{ db: Database; drop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pglite-'));
  await copyMigratedPglite(join(dir, 'db'));
  const db = createDatabase({ kind: 'pglite', dataDir: join(dir, 'db') });
  return {
    db,
    drop: async () => {
      await db.knex.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let template: Promise<string> | undefined;

function templateDir(): Promise<string> {
  template ??= buildOnce();
  return template;
}

async function buildOnce(): Promise<string> {
  const dir = join(tmpdir(), `svc-pglite-template-${templateKey()}`);
  if (existsSync(join(dir, 'PG_VERSION'))) return dir;
  // Built aside and renamed into place: two jest workers may build at once; one rename wins.
  const scratch = mkdtempSync(join(tmpdir(), 'svc-pglite-build-'));
  const db = createDatabase({ kind: 'pglite', dataDir: join(scratch, 'db') });
  await db.knex.migrate.latest();
  await db.knex.destroy();
  // The modes a controller's own start leaves (the copy keeps them): private to its user.
  makePrivate(join(scratch, 'db'));
  try {
    renameSync(join(scratch, 'db'), dir);
  } catch (err) {
    if (!existsSync(join(dir, 'PG_VERSION'))) throw err;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return dir;
}

function makePrivate(dir: string): void {
  chmodSync(dir, 0o700);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) makePrivate(path);
    else chmodSync(path, 0o600);
  }
}

function templateKey(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json')));
  for (const dir of ['migrations', 'src/db']) {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      if (name.endsWith('.ts')) hash.update(name).update(readFileSync(join(ROOT, dir, name)));
    }
  }
  return hash.digest('hex').slice(0, 16);
}
