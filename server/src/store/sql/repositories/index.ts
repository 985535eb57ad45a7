import type { Repositories } from '@baton/core';
import type { SqlQueryable } from '../driver';
import { sqlAllowances, sqlAllowanceWaiters, sqlConsumptions } from './allowances';
import { sqlApiKeys } from './api-keys';
import { sqlBarriers } from './barriers';
import { sqlClaims } from './claims';
import { sqlTimers } from './timers';
import { sqlBudgetEntries } from './budget-entries';
import { sqlBudgets } from './budgets';
import { sqlDeliveryAttempts, sqlDestinations } from './destinations';
import { sqlDiagnostics } from './diagnostics';
import { sqlEvents } from './events';
import { sqlIdempotency } from './idempotency';
import { sqlMailboxes, sqlMessages } from './messages';
import { sqlOrgs } from './orgs';
import { sqlPools } from './pools';
import { sqlSavepoints } from './savepoints';
import { sqlReservations } from './reservations';
import { sqlRetention } from './retention';
import { sqlSpaces } from './spaces';
import { sqlTasks } from './tasks';
import { sqlTaskGroups } from './groups';
import { sqlWorkLimits } from './work-limits';
import { sqlUsage } from './usage';
import { sqlRuns } from './runs';

/** The repositories over one connection or transaction. Cheap: plain closures, no state. */
export function sqlRepositories(q: SqlQueryable): Repositories {
  return {
    savepoints: sqlSavepoints(q),
    allowances: sqlAllowances(q),
    allowanceWaiters: sqlAllowanceWaiters(q),
    consumptions: sqlConsumptions(q),
    orgs: sqlOrgs(q),
    spaces: sqlSpaces(q),
    apiKeys: sqlApiKeys(q),
    budgets: sqlBudgets(q),
    reservations: sqlReservations(q),
    budgetEntries: sqlBudgetEntries(q),
    barriers: sqlBarriers(q),
    claims: sqlClaims(q),
    timers: sqlTimers(q),
    events: sqlEvents(q),
    idempotency: sqlIdempotency(q),
    retention: sqlRetention(q),
    pools: sqlPools(q),
    workLimits: sqlWorkLimits(q),
    mailboxes: sqlMailboxes(q),
    messages: sqlMessages(q),
    tasks: sqlTasks(q),
    taskGroups: sqlTaskGroups(q),
    destinations: sqlDestinations(q),
    deliveryAttempts: sqlDeliveryAttempts(q),
    diagnostics: sqlDiagnostics(q),
    usage: sqlUsage(q),
    runs: sqlRuns(q),
  };
}
