import { existsSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { defineConfig } from 'tsup';
import { usableTemplate, writePgliteTemplate } from './src/store/sql/pglite-template';

// `npm start` and the `baton` command run this build, not TypeScript through a loader. @baton/core
// is bundled in; the npm dependencies stay external. The migrations are read at run time from
// beside the module that loads them (store/sql/migrate.ts), so they are copied next to it.
// So is the embedded store's template database (store/sql/pglite-template.ts): initdb takes
// seconds and most of a gigabyte, so it runs once per PGlite version, into a cache that later
// builds copy from. The console's static build (the `console` workspace, built before this one) is
// copied too, so the packed server serves /console without the workspace beside it.
const templateCache = new URL('../node_modules/.cache/baton/pglite-template/', import.meta.url).pathname;

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
    if (!usableTemplate(templateCache)) await writePgliteTemplate(templateCache);
    await cp(templateCache, 'dist/pglite-template', { recursive: true });
    if (existsSync('../console/dist/index.html')) await cp('../console/dist', 'dist/console', { recursive: true });
  },
});
