import { connect, createServer, type Socket } from 'node:net';

export interface TcpRelay {
  port: number;
  /** Drops every relayed connection and, until `restore`, every new one as soon as it arrives. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP relay on 127.0.0.1 to `host:port`, which a test cuts to make one process lose its
 * database while the others keep theirs. A cut relay still accepts (the port stays bound, so no
 * other process can take it) and closes each connection at once.
 */
export async function startTcpRelay(host: string, port: number): Promise<TcpRelay> {
  const open = new Set<Socket>();
  let cut = false;
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (cut) return void client.destroy();
    const upstream = connect({ host, port });
    track(upstream);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const dropAll = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      dropAll();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        dropAll();
      }),
  };
}
