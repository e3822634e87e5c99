import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP relay between the service and PostgreSQL that counts the statements the service sends:
 * every simple `Query` message and every `Bind` of the extended protocol (one per execution,
 * whether the statement was parsed just before, unnamed, or prepared once under a name), BEGIN
 * and COMMIT included. It reads the client's side of the protocol
 * only as far as message types and lengths (PostgreSQL protocol 3.0, "Message Formats"); bytes pass
 * through unchanged. Loopback, no TLS (the bench's database URL has none).
 */
export interface StatementCounter {
  port: number;
  /** Statements sent so far, over every connection, BEGIN/COMMIT/ROLLBACK included. */
  count(): number;
  /** The BEGIN, COMMIT and ROLLBACK among them. */
  transactionControl(): number;
  /** The statements of timers among them (revocation catch-up, key watcher, janitors), not of requests. */
  background(): number;
  close(): Promise<void>;
}

const QUERY = 0x51; // 'Q'
const PARSE = 0x50; // 'P'
const BIND = 0x42; // 'B'
export type StatementKind = 'statement' | 'transaction-control' | 'background';

const TRANSACTION_CONTROL = /^(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)\b/i;
// What each process does on its own timers, not per request: the revocation catch-up read (every
// second), the signing-key watcher's poll, the janitors' batched deletes (every minute).
const BACKGROUND = [
  /^select\b.*\bfrom "revocations"/is,
  /^select \* from "signing_keys"/i,
  /^DELETE FROM \w+ WHERE .*\bIN\s*\(\s*SELECT\b/s,
];

/** What a statement is, from the start of its text (the whole text is within the chunk in practice). */
function kindOf(text: string): StatementKind {
  if (TRANSACTION_CONTROL.test(text)) return 'transaction-control';
  return BACKGROUND.some((re) => re.test(text)) ? 'background' : 'statement';
}

/** Counts the statements in one connection's client-to-server byte stream, chunk by chunk. */
function messageCounter(onStatement: (kind: StatementKind) => void): (chunk: Buffer) => void {
  let startup = true; // the first message (StartupMessage) has no type byte
  let skip = 0; // bytes of the current message body still to pass
  let head: number[] = [];
  // What each statement parsed on this connection is, by name ('' is the unnamed one).
  const parsed = new Map<string, StatementKind>();
  return (chunk) => {
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        skip -= n;
        i += n;
        continue;
      }
      const headLength = startup ? 4 : 5;
      while (head.length < headLength && i < chunk.length) head.push(chunk[i++]!);
      if (head.length < headLength) return;
      const h = Buffer.from(head);
      head = [];
      if (startup) {
        startup = false;
        skip = h.readInt32BE(0) - 4;
      } else {
        if (h[0] === QUERY) onStatement(kindOf(chunk.toString('latin1', i, i + 200)));
        else if (h[0] === PARSE) {
          // The statement's name (a C string, empty for node-pg's unnamed statements), then its text.
          const text = chunk.toString('latin1', i, i + 300);
          const end = text.indexOf('\0');
          parsed.set(text.slice(0, end), kindOf(text.slice(end + 1)));
        } else if (h[0] === BIND) {
          // The portal's name, then the statement's (C strings).
          const names = chunk.toString('latin1', i, i + 200).split('\0');
          onStatement(parsed.get(names[1] ?? '') ?? 'statement');
        }
        skip = h.readInt32BE(1) - 4;
      }
    }
  };
}

export async function startStatementCounter(upstream: {
  host: string;
  port: number;
}): Promise<StatementCounter> {
  let statements = 0;
  let control = 0;
  let background = 0;
  const sockets = new Set<Socket>();
  // noDelay on both sides, as the PostgreSQL client and server set it: with Nagle's algorithm the
  // tail of a result larger than a segment waits for the delayed ACK of the rest (40 ms on Linux).
  const server: Server = createServer({ noDelay: true }, (client) => {
    const db = connect({ port: upstream.port, host: upstream.host, noDelay: true });
    sockets.add(client).add(db);
    const count = messageCounter((kind) => {
      statements++;
      if (kind === 'transaction-control') control++;
      if (kind === 'background') background++;
    });
    client.on('data', (chunk: Buffer) => {
      count(chunk);
      if (!db.write(chunk)) client.pause();
    });
    db.on('drain', () => client.resume());
    db.pipe(client);
    const end = () => {
      client.destroy();
      db.destroy();
      sockets.delete(client);
      sockets.delete(db);
    };
    client.on('close', end).on('error', end);
    db.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('statement counter: no port');
  return {
    port: address.port,
    count: () => statements,
    transactionControl: () => control,
    background: () => background,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
