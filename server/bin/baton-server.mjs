#!/usr/bin/env node
// `baton-server`: the compiled CLI (npm run build; `npm install` builds it through prepare).
// A name of its own, so `npx baton-server` never resolves an unrelated registry package.
const { run } = await import('../dist/cli.js');
process.exitCode = await run(process.argv.slice(2));
