import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

const OPTIONS: LoggerOptions = {
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
};

/**
 * Structured logs; credentials are redacted wherever they might be attached. Standard output
 * unless another destination is given (the restore step keeps stdout for its summary line).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return destination ? pino({ ...OPTIONS, level }, destination) : pino({ ...OPTIONS, level });
}
