import { main } from './main.js';

// `node --import tsx src/cli/main-entry.ts …` runs the current source (tests, development);
// the installed command is bin/svc.js, which runs the built main.js.
process.exitCode = await main(process.argv.slice(2));
