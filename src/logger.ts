import { pino, type Logger } from 'pino';

/** Structured logs; credentials are redacted wherever they might be attached. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'svc-controller' },
    redact: {
      paths: [
        '*.password',
        '*.token',
        '*.code',
        '*.secret',
        'req.headers.authorization',
        'req.headers["svc-session"]',
        'req.headers.cookie',
      ],
      censor: '[redacted]',
    },
  });
}
