import { fileURLToPath } from 'node:url';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// The tests that mutation testing (stryker.config.mjs) runs against core's mutants: core's own
// unit and property tests, the store conformance suites and the HTTP suites, all on the memory
// store only (BATON_TEST_STORES): a mutant of core reaches PGlite and PostgreSQL through the
// same rules and services, so the SQL stores would only repeat the verdict at many times the cost.
// No global setup: no PostgreSQL container is started. BATON_MUTATE_TESTS (comma-separated
// globs) runs other test files instead, for a measured subset: a service against its own suites.
const conditions = ['@baton/source', ...defaultServerConditions];

/**
 * Stryker runs this config in a sandbox copy of the repository whose node_modules links back to
 * the original, where npm's workspace links lead to the original, unmutated packages: the
 * workspace packages are resolved here, to this directory's copies.
 */
export const workspaceAliases = (dir: string) => [
  { find: /^@baton\/core$/, replacement: `${dir}/core/src/index.ts` },
  { find: /^@baton-coordination\/server$/, replacement: `${dir}/server/src/index.ts` },
  { find: /^@baton-coordination\/server\/(.*)$/, replacement: `${dir}/server/src/$1` },
  { find: /^@baton-coordination\/runtime$/, replacement: `${dir}/runtime/src/index.ts` },
  { find: /^@baton-coordination\/runtime\/(.*)$/, replacement: `${dir}/runtime/src/$1` },
];

const here = fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '');

export default defineConfig({
  resolve: { conditions, alias: workspaceAliases(here) },
  ssr: { resolve: { conditions } },
  test: {
    include: process.env.BATON_MUTATE_TESTS?.split(',') ?? ['core/src/**/*.test.ts', 'test/store-conformance*.test.ts', 'test/http/*.test.ts'],
    env: { BATON_TEST_STORES: 'memory' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Stryker runs its own workers (its `concurrency`); each runs vitest in one fork.
    maxWorkers: 1,
  },
});
