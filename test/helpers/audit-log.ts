import { pino } from 'pino';

export type AuditLine = Record<string, any>;

/** A logger for a test server whose audit events the test reads back, in the order written. */
export function capturedAuditLog() {
  const raw: string[] = [];
  const logger = pino({ level: 'info' }, { write: (chunk: string) => void raw.push(chunk) });
  const events = (): AuditLine[] =>
    raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditLine)
      .filter((l) => l.audit === true);
  return { logger, events };
}
