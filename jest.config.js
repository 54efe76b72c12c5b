/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': 'ts-jest' },
  testTimeout: 120000,
  // One worker: the router tests measure throughput and latency against a real HAProxy, and
  // synthesis-heavy files running beside them would skew those numbers on a 2-core machine.
  maxWorkers: 1,
};
