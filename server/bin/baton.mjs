#!/usr/bin/env node
// The `baton` command. Sources are TypeScript, loaded through tsx so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../src/cli/main.ts');
process.exitCode = await run(process.argv.slice(2));
