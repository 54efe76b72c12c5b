/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': 'ts-jest' },
  // A safety net against a hang, not a speed check: a synthesis-heavy beforeAll that takes a minute
  // on a quiet machine can take three on a loaded one. Tests wait on conditions with their own
  // deadlines (60 s) and say what they waited for.
  testTimeout: 300000,
  // One temporary folder per run, removed at the end (test/support/tmpdir.ts).
  globalSetup: '<rootDir>/test/support/tmpdir.ts',
  globalTeardown: '<rootDir>/test/support/tmpdir-teardown.ts',
  // One worker: the router tests measure throughput and latency against a real HAProxy, and
  // synthesis-heavy files running beside them would skew those numbers on a 2-core machine.
  maxWorkers: 1,
};
