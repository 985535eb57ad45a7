-- Admission: a task delivery carries what it needs (its task's requirements, resolved to ids at
-- submit) and, while claimed by an admit, what it holds. Both are small JSON documents read and
-- written with the row admission already locks, so claiming or releasing them costs no extra
-- statement; the shapes are core/src/admission/model.ts.
ALTER TABLE messages ADD COLUMN requirements jsonb;
ALTER TABLE messages ADD COLUMN claimed jsonb;
ALTER TABLE messages ADD CONSTRAINT messages_claimed_only_while_claimed CHECK (claimed IS NULL OR state = 'CLAIMED');
-- claimCandidate: admission takes only task deliveries, oldest first, after passed-over ones.
CREATE INDEX messages_ready_deliveries ON messages (space_id, mailbox_id, scope_id, seq) WHERE state = 'READY' AND task_id IS NOT NULL;
