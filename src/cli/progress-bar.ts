import type { Writable } from 'node:stream';

export interface ProgressBar {
  update(done: number, failed: number): void;
  finish(): void;
}

const NONE: ProgressBar = { update: () => undefined, finish: () => undefined };

/**
 * A one-line bar redrawn in place on `stream`, only when it is a terminal: redirected or piped
 * stderr gets nothing, so logs and scripts never see carriage returns.
 */
export function progressBar(
  stream: Writable & { isTTY?: boolean; columns?: number },
  total: number,
  label: string,
): ProgressBar {
  if (!stream.isTTY || total === 0) return NONE;
  const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - 40));
  let shown = '';
  const draw = (done: number, failed: number) => {
    const filled = Math.round((done / total) * width);
    const text =
      `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}` +
      (failed > 0 ? `, ${failed} failed` : '');
    if (text === shown) return;
    shown = text;
    stream.write(`\r${text}\x1b[K`);
  };
  draw(0, 0);
  return {
    update: draw,
    finish: () => stream.write('\n'),
  };
}
