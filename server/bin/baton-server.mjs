#!/usr/bin/env node
// `baton-server`: the compiled CLI (npm run build; `npm install` builds it through prepare).
// The package's only binary, so `npx @baton-coordination/server` runs it from the registry's name.
// A reader that closes the pipe early (`baton-server orgs list | head`) ends the output, not in a crash.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});
const { run } = await import('../dist/cli.js');
process.exitCode = await run(process.argv.slice(2));
