import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['core/src/**/*.test.ts', 'server/src/**/*.test.ts', 'runtime/src/**/*.test.ts', 'sim/src/**/*.test.ts', 'test/**/*.test.ts'],
    // Starts a PostgreSQL container when DATABASE_URL is unset and Docker is in reach.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
