import { describe, expect, test } from '@jest/globals';
import { corsAllowedPath } from './cors.js';
import { corsOriginMatcher } from '../config/uri-patterns.js';

describe('CORS origins', () => {
  test('scheme and host must match, and a * port matches digits only', () => {
    const allowed = corsOriginMatcher(['http://localhost:*/auth/callback'], ['https://app.example.com']);
    expect(allowed('http://localhost:8080')).toBe(true);
    expect(allowed('http://localhost')).toBe(false);
    expect(allowed('http://localhost:80a')).toBe(false);
    expect(allowed('http://localhost.evil.com:80')).toBe(false);
    expect(allowed('https://localhost:8080')).toBe(false);
    expect(allowed('https://app.example.com')).toBe(true);
    expect(allowed('https://app.example.com.evil')).toBe(false);
  });

  test('the authorization endpoint and the login pages are never cross-origin', () => {
    expect(corsAllowedPath('/oidc/token')).toBe(true);
    expect(corsAllowedPath('/edge/client/v1/current-identity')).toBe(true);
    expect(corsAllowedPath('/oidc/authorization')).toBe(false);
    expect(corsAllowedPath('/oidc/login/username')).toBe(false);
  });
});
