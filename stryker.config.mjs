// Mutation testing of core's decisions (issue 32, docs/testing.md): StrykerJS plants one change
// at a time in the rules, the services and the store operations that decide, and runs the tests
// that cover it (vitest.stryker.config.ts: core's tests, the store conformance and HTTP suites,
// on the memory store). A mutant no test fails on is a gap or an equivalent change.
//
// `npm run mutate` runs the whole set (the nightly); `npm run mutate:rules` the rules files
// against core's own tests only (fast enough for .ci/run). Both are incremental: results for
// code and tests that did not change are taken from the committed reports/stryker-incremental.json.

/** The rules: pure functions that take the decisions. */
export const rulesFiles = ['core/src/**/rules.ts'];

/** The services and the store operations that decide (leases, lines, windows, deliveries). */
export const serviceFiles = [
  'core/src/**/service.ts',
  'core/src/admission/claims.ts',
  'core/src/deliveries/*.ts',
  'core/src/store/memory/*.ts',
];

const only = process.env.BATON_MUTATE; // 'rules' narrows the run; unset runs the whole set

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: {
    configFile: only === 'rules' ? 'vitest.stryker-core.config.ts' : 'vitest.stryker.config.ts',
    // Run only the test files that import the mutated file (vitest --related).
    related: true,
  },
  mutate: [...(only === 'rules' ? rulesFiles : [...rulesFiles, ...serviceFiles]), '!**/*.test.ts'],
  // npm workspaces link @baton/core to ./core: a sandbox copy would still load the original
  // sources through that link, so the mutants are planted in place (and taken out at the end).
  inPlace: true,
  coverageAnalysis: 'perTest',
  // A mutant of a module-level constant needs every test rerun: skipped, the rules have few.
  ignoreStatic: true,
  incremental: true,
  incrementalFile: only === 'rules' ? 'reports/stryker-incremental-rules.json' : 'reports/stryker-incremental.json',
  // The machine is shared: one test runner at a time unless told otherwise (--concurrency N).
  concurrency: 1,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${only ?? 'all'}.json` },
  htmlReporter: { fileName: `reports/mutation/${only ?? 'all'}.html` },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
