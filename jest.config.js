const fs = require('fs');
const path = require('path');

/**
 * A test file is an integration test when it starts a program from outside node_modules or a
 * long-running server; each marker names what the file then needs installed (docs/testing.md).
 * Every other file is a unit or synthesis test: it needs nothing but `npm ci` and runs in parallel.
 * A new file is sorted by what it uses, so one that starts HAProxy cannot land among the unit tests.
 */
const INTEGRATION_MARKERS = [
  ['HAProxy', /\b(startLocalRouter|startRouterBehindNlb)\b|spawn(Sync)?\('haproxy'|'router', 'local'/],
  ['the local fleet (HAProxy, PostgreSQL)', /\bstart(LocalFleet|ImageRouter|FloodProcess)\b/],
  ['PostgreSQL', /\bstart(TestPostgres|PostgresServer|Postgres|Workload)\b/],
  ['moto_server', /\bstartMoto\b/],
  ['chromium', /\b(screenshot|evaluateInPage)\(/],
  ['buildah and podman', /\b(runContainer|buildContainerImage|runBuildCommands)\b|'(buildah|podman)'/],
  ['cfn-lint', /\bcfnLintFindings\b/],
  ['openssl', /'openssl'/],
  ['npm and the npm registry (packs the package, installs it into a fresh app)', /\bspawn(Sync)?\('npm'|\brun\('npm'/],
];

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const integration = testFiles(path.join(__dirname, 'test')).filter((file) =>
  INTEGRATION_MARKERS.some(([, marker]) => marker.test(fs.readFileSync(file, 'utf8'))),
);

/** `<rootDir>/test/a/b.test.ts` as a path regex that matches that file only. */
const exactly = (file) => `^${path.resolve(file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

const common = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': '<rootDir>/test/support/transform.js' },
  // One temporary folder per run, removed at the end (test/support/tmpdir.ts).
  globalSetup: '<rootDir>/test/support/tmpdir.ts',
  globalTeardown: '<rootDir>/test/support/tmpdir-teardown.ts',
  // No stack traces in construct metadata: a sixth of a synthesis's CPU (test/support/cdk-context.ts).
  setupFiles: ['<rootDir>/test/support/cdk-context.ts'],
  // jest's runtime with V8's code cache kept between a worker's test files (docs/test-runtime.md);
  // `TEST_RUNTIME=jest` runs on jest's own runtime instead.
  ...(process.env.TEST_RUNTIME === 'jest' ? {} : { runtime: '<rootDir>/test/support/runtime.js' }),
  // `TEST_CPU_LOG=FILE npm run test:unit`: each file's CPU seconds, appended to FILE (test/support/cpu-log.ts).
  ...(process.env.TEST_CPU_LOG ? { setupFilesAfterEnv: ['<rootDir>/test/support/cpu-log.ts'] } : {}),
};

/** @type {import('jest').Config} */
module.exports = {
  // A safety net against a hang, not a speed check: a synthesis-heavy beforeAll that takes a minute
  // on a quiet machine can take three on a loaded one. Tests wait on conditions with their own
  // deadlines (60 s) and say what they waited for.
  testTimeout: 300000,
  projects: [
    { ...common, displayName: 'unit', testPathIgnorePatterns: ['/node_modules/', ...integration.map(exactly)] },
    // Run with one worker (`npm run test:integration`): the router tests measure throughput and
    // latency against a real HAProxy, and files running beside them would skew those numbers.
    { ...common, displayName: 'integration', testMatch: integration },
  ],
};
