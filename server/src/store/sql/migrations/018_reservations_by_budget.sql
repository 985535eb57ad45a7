-- GET /budgets/{id}/reservations (docs/design/0007-budget-reservations.md): a budget's reservations in any state, oldest
-- first, one range scan per page. reservations_active_by_budget (001) covers ACTIVE only.
CREATE INDEX reservations_by_budget ON reservations (space_id, budget_id, created_at, id);
