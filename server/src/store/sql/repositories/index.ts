import type { Repositories } from '@baton/core';
import type { SqlQueryable } from '../driver';
import { sqlApiKeys } from './api-keys';
import { sqlBudgetEntries } from './budget-entries';
import { sqlBudgets } from './budgets';
import { sqlEvents } from './events';
import { sqlIdempotency } from './idempotency';
import { sqlOrgs } from './orgs';
import { sqlReservations } from './reservations';
import { sqlSpaces } from './spaces';

/** The repositories over one connection or transaction. Cheap: plain closures, no state. */
export function sqlRepositories(q: SqlQueryable): Repositories {
  return {
    orgs: sqlOrgs(q),
    spaces: sqlSpaces(q),
    apiKeys: sqlApiKeys(q),
    budgets: sqlBudgets(q),
    reservations: sqlReservations(q),
    budgetEntries: sqlBudgetEntries(q),
    events: sqlEvents(q),
    idempotency: sqlIdempotency(q),
  };
}
