import { defineConfig } from 'tsup';

// The published package: one ES module and one declaration file. @baton/core is private, so what
// the runtime uses of it (the wire schemas, the clocks, the group rule) is bundled in, code and
// types; zod is the one runtime dependency.
export default defineConfig({
  entry: ['src/index.ts'],
  format: 'esm',
  target: 'node20',
  platform: 'node',
  noExternal: ['@baton/core'],
  dts: { resolve: ['@baton/core'] },
  clean: true,
  sourcemap: true,
});
