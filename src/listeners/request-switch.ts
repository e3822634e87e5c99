import type { IncomingMessage, ServerResponse } from 'node:http';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The one `request` listener of a server, attached before the port is bound, so that no request
 * ever arrives at a server without a handler: Node answers nothing and applies no deadline to a
 * request that nobody handles. The handler behind it changes as the controller starts (the
 * "starting" answer, then the application) and stops (the "stopping" answer).
 */
export function createRequestSwitch(phases: { starting: RequestHandler; stopping: RequestHandler }) {
  let current = phases.starting;
  let closing = false;
  const inFlight = new Set<ServerResponse>();

  const handle: RequestHandler = (req, res) => {
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    if (closing) res.setHeader('Connection', 'close');
    current(req, res);
  };

  return {
    handle,
    /** Requests from now on go to the application; requests already dispatched stay where they are. */
    serve(application: RequestHandler): void {
      current = application;
    },
    /**
     * Requests from now on get the "stopping" answer; every response not yet under way, and every
     * later one, closes its connection after it is sent (RFC 9112 §9.6): a client learns to open
     * its next connection elsewhere.
     */
    stop(): void {
      current = phases.stopping;
      closing = true;
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    },
    /** Requests dispatched and not yet answered. */
    inFlight: (): number => inFlight.size,
  };
}

export type RequestSwitch = ReturnType<typeof createRequestSwitch>;
