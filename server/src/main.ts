import { startServer } from './serve';

/** `npm start` (node server/dist/main.js): the server with this process's environment. */
startServer(process.env).catch((error: unknown) => {
  process.stderr.write(`baton: failed to start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
