-- The run that work under a scope belongs to (RunRepository.governing, docs/design/0019-runs.md): a scope
-- that is a task group's gate scope belongs where its group's parent_scope_id does, so every
-- request that creates work under a scope looks the scope up among the gate scopes.
CREATE INDEX task_groups_by_scope ON task_groups (space_id, scope_id);
