import { startServer } from '../server/src/serve';
import { isProcessBug, plantedStore, processBugs } from './bugs';

/**
 * The server of `npm start`, run from source with one of the process bugs (torture/bugs.ts)
 * planted at its store seam (TORTURE_PLANT), so a test can show the torture checker catches it.
 * Nothing in the shipped server reads TORTURE_PLANT.
 */
const bug = process.env.TORTURE_PLANT;
if (!bug || !isProcessBug(bug)) {
  process.stderr.write(`planted-server: TORTURE_PLANT must be one of ${processBugs.join(', ')}\n`);
  process.exit(2);
}
startServer(process.env, { store: (opened) => plantedStore(bug, opened) }).catch((error: unknown) => {
  process.stderr.write(`baton: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
