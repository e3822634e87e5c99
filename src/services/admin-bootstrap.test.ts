import { describe, expect, test } from '@jest/globals';
import { generatedAdminPassword } from './admin-bootstrap.js';

describe('the generated first-admin password', () => {
  test('is 24 base64url characters and never starts with a dash (svc login -p would read it as an option)', () => {
    // One in 64 raw draws starts with `-`: 2,000 draws would see about 31 of them.
    const drawn = Array.from({ length: 2000 }, generatedAdminPassword);
    expect(drawn.every((p) => /^[A-Za-z0-9_][A-Za-z0-9_-]{23}$/.test(p))).toBe(true);
    expect(new Set(drawn).size).toBe(drawn.length);
  });
});
