import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// The tests that mutation testing (stryker.config.mjs) runs against core's mutants: core's own
// unit and property tests, the store conformance suites and the HTTP suites, all on the memory
// store only (BATON_TEST_STORES): a mutant of core reaches PGlite and PostgreSQL through the
// same rules and services, so the SQL stores would only repeat the verdict at many times the cost.
// No global setup: no PostgreSQL container is started.
const conditions = ['@baton/source', ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['core/src/**/*.test.ts', 'test/store-conformance*.test.ts', 'test/http/*.test.ts'],
    env: { BATON_TEST_STORES: 'memory' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Stryker runs its own workers (its `concurrency`); each runs vitest in one fork.
    maxWorkers: 1,
  },
});
