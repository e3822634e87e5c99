import { connect } from 'node:net';

/** Whether a TCP connection to 127.0.0.1:`port` is accepted now (it is closed at once). */
export const acceptsConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
