// docs/cli.md is the CLI reference: its "Every command" table must name every command of `svc`
// with each of its options, so that a command or flag added to src/cli cannot go undocumented.
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { commands } from '../../src/cli/main.js';

const root = resolve(process.cwd());

/** The rows of the table under "## Every command", by their first cell. */
function referenceRows(markdown: string): Map<string, string> {
  const section = markdown.split(/^## Every command$/m)[1]?.split(/^## /m)[0] ?? '';
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = /^\|\s*`([^`]+)`\s*\|(.*)\|\s*$/.exec(line);
    if (cells) rows.set(cells[1]!.replaceAll('\\|', '|'), cells[2]!);
  }
  return rows;
}

describe('docs/cli.md', () => {
  const rows = referenceRows(readFileSync(join(root, 'docs', 'cli.md'), 'utf8'));

  test('the reference table lists exactly the commands of src/cli, with their arguments', () => {
    const expected = commands.map((c) => `svc ${c.words.join(' ')} ${c.args}`.trimEnd());
    expect([...rows.keys()].sort()).toEqual(expected.sort());
  });

  test("each command's row names every one of its options, long and short", () => {
    const missing: string[] = [];
    for (const c of commands) {
      const row = rows.get(`svc ${c.words.join(' ')} ${c.args}`.trimEnd()) ?? '';
      for (const [name, option] of Object.entries(c.options)) {
        if (!new RegExp(`--${name}\\b`).test(row)) missing.push(`${c.words.join(' ')}: --${name}`);
        if (option.short && !row.includes(`-${option.short},`))
          missing.push(`${c.words.join(' ')}: -${option.short}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
