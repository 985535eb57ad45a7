import { defineConfig } from 'vite';

/**
 * Static assets served by the server at /console (server/src/http/console.ts): hashed file names
 * under assets/ (cached as immutable) and one index.html (never cached). No inline script or
 * style is emitted, so the server's Content-Security-Policy can forbid them.
 */
export default defineConfig({
  base: '/console/',
  // JSX through esbuild (tsconfig's jsxImportSource: preact): no Babel plugin needed.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Vite inlines small assets as data: URLs by default; the CSP allows none.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
