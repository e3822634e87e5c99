import { expect } from '@jest/globals';
import type { TestResponse } from './https-client.js';

export interface ExpectedError {
  status: number;
  code: string;
  /**
   * The exact WWW-Authenticate header values, one per challenge in order; a string when exactly
   * one challenge is expected. Omitted: not checked.
   */
  challenge?: string | string[];
}

/**
 * Asserts an Edge error response: the status, the envelope `{error: {code, message, requestId,
 * cause?}, meta: {apiVersion: '1'}}` with nothing else in it, the code, and (when given) the exact
 * challenges. Returns the `error` object for further assertions.
 */
export function expectError(res: TestResponse, expected: ExpectedError): Record<string, any> {
  const seen = { status: res.status, body: res.body };
  expect(seen).toMatchObject({
    status: expected.status,
    body: { error: { code: expected.code }, meta: { apiVersion: '1' } },
  });
  expect(String(res.header('content-type'))).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
  expect(res.body.meta).toEqual({ apiVersion: '1' });
  const error = res.body.error;
  expect(Object.keys(error).filter((k) => !['code', 'message', 'requestId', 'cause'].includes(k))).toEqual(
    [],
  );
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(typeof error.requestId).toBe('string');
  expect(error.requestId.length).toBeGreaterThan(0);
  if (expected.challenge !== undefined) {
    expect(res.headerAll('www-authenticate')).toEqual([expected.challenge].flat());
  }
  return error;
}
