// Mutation testing of core's decisions (issue 32, docs/testing.md): StrykerJS plants one change
// at a time in the rules, the services and the store operations that decide, and runs the tests
// that cover it (vitest.stryker.config.ts: core's tests, the store conformance and HTTP suites,
// on the memory store). A mutant no test fails on is a gap or an equivalent change.
//
// `npm run mutate` runs the whole set (the nightly); `npm run mutate:rules` the rules files
// against core's own tests only (fast enough for .ci/run). Both are incremental: results for
// code and tests that did not change are taken from the committed reports/stryker-incremental*.json.
//
// BATON_MUTATE=rules narrows the run to the rules files; unset runs the whole set. Another name
// keeps the reports of a measured subset apart, e.g. BATON_MUTATE=claims-service
// BATON_MUTATE_TESTS=test/http/claims.test.ts npx stryker run --mutate core/src/claims/service.ts

/** The rules: pure functions that take the decisions. */
const rulesFiles = ['core/src/**/rules.ts'];

/** The services and the store operations that decide (leases, lines, windows, deliveries). */
const serviceFiles = [
  'core/src/**/service.ts',
  'core/src/admission/claims.ts',
  'core/src/deliveries/*.ts',
  'core/src/store/memory/*.ts',
];

const only = process.env.BATON_MUTATE;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner', './stryker-ignorers.mjs'],
  ignorers: ['assertion-messages'],
  vitest: {
    // Both configs resolve the workspace packages to the sandbox's copies (see there).
    configFile: only === 'rules' ? 'vitest.stryker-core.config.ts' : 'vitest.stryker.config.ts',
    // Run only the test files that import the mutated file (vitest --related).
    related: true,
  },
  mutate: [...(only === 'rules' ? rulesFiles : [...rulesFiles, ...serviceFiles]), '!**/*.test.ts'],
  coverageAnalysis: 'perTest',
  // A mutant of a module-level constant needs every test rerun: skipped.
  ignoreStatic: true,
  incremental: true,
  incrementalFile: only ? `reports/stryker-incremental-${only}.json` : 'reports/stryker-incremental.json',
  // The machine is shared: one test runner at a time unless told otherwise (--concurrency N).
  concurrency: 1,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${only ?? 'all'}.json` },
  htmlReporter: { fileName: `reports/mutation/${only ?? 'all'}.html` },
  // The rules' target is 85 % killed: under it `npm run mutate:rules` (and so .ci/run) fails.
  thresholds: { high: 90, low: 85, break: only === 'rules' ? 85 : null },
  tempDirName: '.stryker-tmp',
  // Not copied into the sandbox: the simulator's mutant sandboxes and local data.
  ignorePatterns: ['.tmp', '.baton'],
  cleanTempDir: 'always',
};
