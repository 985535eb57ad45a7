import { defineConfig } from 'tsup';

// @baton/core is private: the server and the runtime bundle what they use of it. Its own build
// exists so every workspace compiles and type-checks as it ships (npm run build).
export default defineConfig({
  entry: ['src/index.ts'],
  format: 'esm',
  target: 'node20',
  platform: 'node',
  dts: true,
  clean: true,
  sourcemap: true,
});
