/** Text that holds more PEM blocks than the caller accepts. */
export class PemError extends Error {
  override readonly name = 'PemError';
}

export interface PemBlock {
  /** The block from its BEGIN line through its END line. */
  pem: string;
  /** The base64 between the encapsulation boundaries, decoded (RFC 7468 §2). */
  der: Buffer;
}

/**
 * How many blocks a bundle sent to us may hold: a leaf, its CAs up to a root and some slack. Every
 * certificate in a bundle may cost a parse and a signature check, so a request cannot ask for many.
 */
export const MAX_PEM_BLOCKS = 16;

/**
 * The next complete `label` block at or after `from`. Each boundary is found with indexOf, so one
 * pass costs time linear in the text whatever it holds; a backtracking regex over the same text is
 * quadratic when it holds many BEGIN lines without an END. Text outside blocks is skipped, as
 * RFC 7468 §5.2 allows; of several BEGIN lines before one END, the last one opens the block.
 */
function nextBlock(text: string, label: string, from: number): (PemBlock & { end: number }) | undefined {
  const begin = `-----BEGIN ${label}-----`;
  const endLine = `-----END ${label}-----`;
  const firstBegin = text.indexOf(begin, from);
  if (firstBegin < 0) return undefined;
  const endAt = text.indexOf(endLine, firstBegin + begin.length);
  if (endAt < 0) return undefined;
  const start = text.lastIndexOf(begin, endAt - begin.length);
  const end = endAt + endLine.length;
  const body = text.slice(start + begin.length, endAt);
  return { pem: text.slice(start, end), der: Buffer.from(body, 'base64'), end };
}

/** The first `label` block of `text`, if any. */
export function firstPemBlock(text: string, label: string): PemBlock | undefined {
  const block = nextBlock(text, label, 0);
  return block && { pem: block.pem, der: block.der };
}

/**
 * Every `label` block of `text`, in order. More than `max` blocks is an error rather than a
 * truncation, so a caller never silently works on part of what it was given.
 */
export function pemBlocks(text: string, label: string, max = MAX_PEM_BLOCKS): PemBlock[] {
  const blocks: PemBlock[] = [];
  for (let block = nextBlock(text, label, 0); block; block = nextBlock(text, label, block.end)) {
    if (blocks.length === max) throw new PemError(`more than ${max} PEM ${label} blocks`);
    blocks.push({ pem: block.pem, der: block.der });
  }
  return blocks;
}
