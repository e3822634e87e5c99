import { connect, createServer, type Socket } from 'node:net';

export interface RoundRobinFront {
  port: number;
  /** Connections relayed to each backend so far. */
  readonly served: readonly number[];
  /** Takes a backend out of the rotation or puts it back, as a balancer's health check does. */
  setInRotation(backend: number, inRotation: boolean): void;
  /** Resolves once no relayed connection to the backend is open. */
  drained(backend: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP front on 127.0.0.1 for several controllers, as the load balancer of a replicated
 * deployment in TCP mode: TLS passes through, and each new connection goes to the next backend in
 * the rotation. A connect that a backend refuses goes to the next one (nothing was sent yet).
 */
export async function startRoundRobinFront(backendPorts: number[]): Promise<RoundRobinFront> {
  const inRotation = backendPorts.map(() => true);
  const served = backendPorts.map(() => 0);
  const open = backendPorts.map(() => new Set<Socket>());
  const all = new Set<Socket>();
  let next = 0;

  const pick = (): number | undefined => {
    for (let i = 0; i < backendPorts.length; i++) {
      const candidate = (next + i) % backendPorts.length;
      if (inRotation[candidate]) {
        next = candidate + 1;
        return candidate;
      }
    }
    return undefined;
  };

  const relay = (client: Socket, attemptsLeft: number) => {
    const backend = pick();
    if (backend === undefined || attemptsLeft === 0) return void client.destroy();
    const upstream = connect({ host: '127.0.0.1', port: backendPorts[backend]! });
    const refused = () => relay(client, attemptsLeft - 1);
    upstream.once('error', refused);
    upstream.once('connect', () => {
      upstream.off('error', refused);
      if (client.destroyed) return void upstream.destroy();
      served[backend]!++;
      open[backend]!.add(upstream);
      all.add(upstream);
      upstream.on('error', () => upstream.destroy());
      upstream.once('close', () => {
        open[backend]!.delete(upstream);
        all.delete(upstream);
        client.destroy();
      });
      client.once('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    all.add(client);
    client.once('close', () => all.delete(client));
    client.on('error', () => client.destroy());
    relay(client, backendPorts.length);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });

  return {
    port: (server.address() as { port: number }).port,
    served,
    setInRotation(backend, on) {
      inRotation[backend] = on;
    },
    async drained(backend) {
      while (open[backend]!.size > 0) await new Promise((r) => setTimeout(r, 20));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of all) socket.destroy();
      }),
  };
}
