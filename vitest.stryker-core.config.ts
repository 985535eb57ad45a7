import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// core's own unit and property tests, the ones `npm run mutate:rules` (stryker.config.mjs) runs
// against the mutants of the rules files: pure, fast, no store and no server.
const conditions = ['@baton/source', ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['core/src/**/*.test.ts'],
    testTimeout: 30_000,
    maxWorkers: 1,
  },
});
