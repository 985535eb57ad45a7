import { cp } from 'node:fs/promises';
import { defineConfig } from 'tsup';

// `npm start` and the `baton` command run this build, not TypeScript through a loader. @baton/core
// is bundled in; the npm dependencies stay external. The migrations are read at run time from
// beside the module that loads them (store/sql/migrate.ts), so they are copied next to it.
export default defineConfig({
  entry: { main: 'src/main.ts', cli: 'src/cli/main.ts', index: 'src/index.ts' },
  format: 'esm',
  target: 'node20',
  platform: 'node',
  noExternal: ['@baton/core'],
  dts: { entry: { index: 'src/index.ts' }, resolve: ['@baton/core'] },
  clean: true,
  sourcemap: true,
  async onSuccess() {
    await cp('src/store/sql/migrations', 'dist/migrations', { recursive: true });
  },
});
