#!/usr/bin/env node
// The `baton` command: the compiled CLI (npm run build; `npm install` builds it through prepare).
const { run } = await import('../dist/cli.js');
process.exitCode = await run(process.argv.slice(2));
