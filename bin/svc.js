#!/usr/bin/env node
// The `svc` command: runs the built CLI (npm start/prestart or npm run build produce dist/).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'cli', 'main.js');
if (!existsSync(built)) {
  const { execSync } = await import('node:child_process');
  execSync('npm run build --silent', { cwd: root, stdio: 'inherit' });
}
const { main } = await import(built);
process.exitCode = await main(process.argv.slice(2));
