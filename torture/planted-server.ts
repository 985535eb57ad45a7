import { plantedBugs, processBugs, type ProcessBug } from '@baton/core';

/**
 * The server of `npm start`, run from source with one of core's process bugs planted
 * (TORTURE_PLANT), so a test can show the torture checker catches it. The compiled server
 * bundles its own copy of core, so the bug can only be planted in a source run; nothing in the
 * shipped server reads TORTURE_PLANT.
 */
const bug = process.env.TORTURE_PLANT as ProcessBug | undefined;
if (!bug || !processBugs.includes(bug)) {
  process.stderr.write(`planted-server: TORTURE_PLANT must be one of ${processBugs.join(', ')}\n`);
  process.exit(2);
}
plantedBugs.add(bug);
await import('../server/src/main');
