import { defineConfig } from 'tsup';

// The simulator runs from source in development (npm run sim); this build checks that it
// compiles against the packages it declares, as they ship.
export default defineConfig({
  entry: { cli: 'src/cli.ts' },
  format: 'esm',
  target: 'node20',
  platform: 'node',
  noExternal: ['@baton/core'],
  clean: true,
  sourcemap: true,
});
