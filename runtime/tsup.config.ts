import { defineConfig } from 'tsup';

// The published package: an ES module and a CommonJS build, each with its own declaration file
// (index.d.ts for `import`, index.d.cts for `require`), so both module systems resolve to
// JavaScript and types of their own kind (arethetypeswrong: `npm run check:package -w
// @baton-coordination/runtime`). @baton/core is private, so what the runtime uses of it (the wire schemas, the
// clocks, the group rule) is bundled in, code and types; zod and standardwebhooks are the
// runtime dependencies.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  target: 'node20',
  platform: 'node',
  noExternal: ['@baton/core'],
  dts: { resolve: ['@baton/core'] },
  clean: true,
  sourcemap: true,
});
