import { terminalText } from './terminal-text.js';

/** How wide a table may be: the terminal's width, or none (the whole cell values). */
export interface TableOptions {
  width?: number;
}

const GAP = 2;
// A column is never squeezed below this (or its header, or its widest value if shorter).
const MIN_COLUMN = 6;

/** `text` cut to `width` characters, its end marked with `…` when anything was cut. */
export function truncate(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  return width <= 1 ? chars.slice(0, width).join('') : `${chars.slice(0, width - 1).join('')}…`;
}

/**
 * Column widths that fit `width`: the widest columns give way first (each down to its minimum),
 * so short columns such as TYPE keep their values whole while a long NAME is cut.
 */
function fitWidths(natural: number[], minimum: number[], width: number): number[] {
  const room = width - GAP * (natural.length - 1);
  const total = (cap: number) =>
    natural.reduce((sum, w, i) => sum + Math.min(w, Math.max(cap, minimum[i]!)), 0);
  if (total(Math.max(...natural)) <= room) return natural;
  let low = 0;
  let high = Math.max(...natural);
  // The largest cap that fits; at cap 0 every column is at its minimum (the table may still overflow).
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (total(mid) <= room) low = mid;
    else high = mid - 1;
  }
  return natural.map((w, i) => Math.min(w, Math.max(low, minimum[i]!)));
}

/**
 * Left-aligned columns separated by two spaces, like `ps` or `kubectl get`. With a width (a
 * terminal), over-long values are cut with `…`; scripts use `--json`, which never cuts.
 */
export function formatTable(rawHeaders: string[], rawRows: string[][], options: TableOptions = {}): string {
  // Escaped before measuring: cell values come from the server or a file and may hold controls.
  const headers = rawHeaders.map((h) => terminalText(h));
  const rows = rawRows.map((r) => r.map((c) => terminalText(c)));
  const length = (s: string) => [...s].length;
  const natural = headers.map((h, i) => Math.max(length(h), ...rows.map((r) => length(r[i] ?? ''))));
  const widths =
    options.width === undefined
      ? natural
      : fitWidths(
          natural,
          natural.map((w, i) => Math.min(w, Math.max(length(headers[i]!), MIN_COLUMN))),
          options.width,
        );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        const cell = truncate(c, widths[i]!);
        return i === cells.length - 1 ? cell : cell + ' '.repeat(widths[i]! - length(cell));
      })
      .join(' '.repeat(GAP))
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
