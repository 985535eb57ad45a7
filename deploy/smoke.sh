#!/usr/bin/env bash
# Smoke test of deploy/compose.yaml: both servers ready; an organization, space and key made
# through the operator API on A; a task submitted on A is admitted on B and completed there.
set -euo pipefail
A=${A:-http://127.0.0.1:8081}
B=${B:-http://127.0.0.1:8082}
ADMIN=${BATON_ADMIN_TOKEN:?set BATON_ADMIN_TOKEN to the token the servers were started with}

for url in "$A" "$B"; do
  for _ in $(seq 1 60); do curl -fs "$url/readyz" >/dev/null && break; sleep 1; done
  curl -fs "$url/readyz" >/dev/null || { echo "not ready: $url"; exit 1; }
done

json() { node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s)$1))"; }
admin() { curl -fs -X POST "$A/admin/v1$1" -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d "$2"; }
api() { curl -fs -X POST "$1/v1/spaces/$SPACE$2" -H "authorization: Bearer $KEY" -H "idempotency-key: smoke-$RANDOM-$RANDOM" -H 'content-type: application/json' -d "$3"; }

ORG=$(admin /orgs '{"name":"smoke","plan":"TEAM"}' | json .id)
SPACE=$(admin "/orgs/$ORG/spaces" '{"name":"main"}' | json .id)
KEY=$(admin "/orgs/$ORG/keys" '{"name":"smoke"}' | json .secret)
SCOPE=00000000-0000-4000-8000-00000000500e
BOX=$(api "$A" /mailboxes '{"name":"smoke"}' | json .id)
TASK=$(api "$A" /tasks "{\"scopeId\":\"$SCOPE\",\"mailboxId\":\"$BOX\",\"taskKey\":\"smoke-1\",\"input\":\"hi\"}" | json .taskId)
DELIVERY=$(api "$B" /tasks/admit "{\"scopeId\":\"$SCOPE\",\"mailboxId\":\"$BOX\",\"holder\":\"smoke\",\"holderSession\":\"s\",\"leaseSeconds\":30,\"waitMs\":5000}")
MESSAGE=$(echo "$DELIVERY" | json .messageId)
TOKEN=$(echo "$DELIVERY" | json .token)
api "$B" "/messages/$MESSAGE/complete" "{\"token\":\"$TOKEN\",\"result\":{\"payload\":\"done\"}}" >/dev/null
STATE=$(curl -fs "$A/v1/spaces/$SPACE/tasks/$TASK" -H "authorization: Bearer $KEY" | json .state)
[ "$STATE" = SUCCEEDED ] || { echo "task $TASK is $STATE"; exit 1; }
echo "smoke: task $TASK submitted on A, admitted and completed on B: $STATE"
