-- The metrics census (MessageRepository.census, server/src/metrics/census-sampler.ts) counts the
-- DEAD messages of each mailbox every few seconds. DEAD rows are rare (a delivery that failed
-- every attempt) but no other index finds them: messages_by_mailbox would walk every ACKED row
-- a mailbox ever held, which grows without bound. This partial index holds DEAD rows only, so the
-- census reads what died and nothing else. Writes pay for it only when a message dies: every
-- other update of a message changes `state` anyway, and is never a HOT update (the partial
-- indexes of 005 and 007 name it), so no update that was HOT stops being one.
CREATE INDEX messages_dead ON messages (space_id, mailbox_id) WHERE state = 'DEAD';
