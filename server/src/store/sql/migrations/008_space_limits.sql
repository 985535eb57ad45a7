-- Per-space limits set with PUT /limits: only what was set is stored (the rest are defaults,
-- core/src/tenancy/space-limits.ts), so a later change of a default reaches every space that
-- never set it.
ALTER TABLE spaces ADD COLUMN limits jsonb;
