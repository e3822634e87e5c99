/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  // PGlite's WASM boot and RSA key generation exceed jest's 5 s default on 2 cores.
  testTimeout: 60000,
  roots: ['<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: false }] },
  maxWorkers: 2,
};
