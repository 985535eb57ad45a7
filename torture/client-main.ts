import { roleContext, type ClientConfig, type RoleContext, type RoleName } from './roles/context';
import { runClaimer } from './roles/claimer';
import { runConsumer } from './roles/consumer';
import { runProducer } from './roles/producer';
import { runRawWorker } from './roles/raw-worker';
import { runReader } from './roles/reader';
import { runSpender } from './roles/spender';
import { runWorker } from './roles/worker';

/** One client process of a torture run: its role comes in TORTURE_CLIENT (JSON ClientConfig). */

const roles: Record<RoleName, (ctx: RoleContext) => Promise<void>> = {
  producer: runProducer,
  worker: runWorker,
  'raw-worker': runRawWorker,
  spender: runSpender,
  claimer: runClaimer,
  consumer: runConsumer,
  reader: runReader,
};

const config = JSON.parse(process.env.TORTURE_CLIENT ?? 'null') as ClientConfig | null;
if (!config) {
  process.stderr.write('torture client: TORTURE_CLIENT is not set (this process is started by npm run torture)\n');
  process.exit(2);
}
let stopping = false;
process.once('SIGTERM', () => (stopping = true));
const ctx = roleContext(config, () => stopping);
ctx.history.note('started', { role: config.role, pid: process.pid });
roles[config.role](ctx).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`torture client ${config.proc}: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
