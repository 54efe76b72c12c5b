/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': 'ts-jest' },
  testTimeout: 120000,
  // One temporary folder per run, removed at the end (test/support/tmpdir.ts).
  globalSetup: '<rootDir>/test/support/tmpdir.ts',
  globalTeardown: '<rootDir>/test/support/tmpdir-teardown.ts',
  // One worker: the router tests measure throughput and latency against a real HAProxy, and
  // synthesis-heavy files running beside them would skew those numbers on a 2-core machine.
  maxWorkers: 1,
};
