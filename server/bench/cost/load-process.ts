/**
 * The load generator of `npm run bench -- peers`, a process of its own so its CPU is read apart
 * from the server's: it runs the `tasks` benchmark's client jobs (submit, drain, cycles; see
 * server/bench/tasks.ts) and the @baton-coordination/runtime fleet's drain (runtime/bench/drain-job.ts), one
 * command at a time, on the parent's word.
 */
import { runtimeDrain, type RuntimeDrainJob } from '../../../runtime/bench/drain-job';
import { runJobHere, type JobMessage } from '../tasks';
import { serveCommands } from './ipc';

serveCommands({
  job: (message: JobMessage) => runJobHere(message),
  runtimeDrain: (job: RuntimeDrainJob) => runtimeDrain(job),
});
