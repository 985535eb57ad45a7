import { availableParallelism } from 'node:os';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources under the `@baton/source` export
// condition (as tsconfig.json's customConditions and the tsx scripts do); published builds
// resolve to dist/.
const conditions = ['@baton/source', ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['core/src/**/*.test.ts', 'server/src/**/*.test.ts', 'runtime/src/**/*.test.ts', 'sim/src/**/*.test.ts', 'torture/**/*.test.ts', 'test/**/*.test.ts'],
    // Starts a PostgreSQL container when DATABASE_URL is unset and Docker is in reach.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Most test time is waiting on PostgreSQL, child processes and leases, not CPU: one worker
    // more than the cores keeps them busy (vitest's default leaves one core free).
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
