import { describe, expect, test } from '@jest/globals';
import type { Context } from 'koa';
import { scriptSourceFor } from './script-source.js';

const at = (host: string) => ({ host }) as Context;

describe('the CSP source of a page script', () => {
  test('a name or address with a port stands as it is', () => {
    expect(scriptSourceFor(at('localhost:1280'), '/account/passkeys.js')).toBe(
      'https://localhost:1280/account/passkeys.js',
    );
    expect(scriptSourceFor(at('10.0.0.1'), '/x.js')).toBe('https://10.0.0.1/x.js');
  });

  test.each([
    "localhost:1280 'unsafe-inline'",
    'localhost:1280;script-src *',
    'evil.example/x.js https://localhost',
    '[::1]:1280',
    '',
  ])('a Host %p gets no script source', (host) => {
    expect(scriptSourceFor(at(host), '/x.js')).toBeUndefined();
  });
});
