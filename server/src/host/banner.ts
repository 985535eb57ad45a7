import { effectiveLimits, type Org, type Plan, type PlanLimits, type Space } from '@baton/core';
import type { DevCredentials } from './bootstrap';

/** What the start-up banner tells: everything a first snippet needs (docs/design/0022-one-team-defaults.md). */
export interface BannerFacts {
  address: string;
  /** The organization, space and key bootstrap created just now (first start on an empty store). */
  created: DevCredentials | undefined;
  /** On a later start with bootstrap on: the store's first organization and its first space. */
  existing: { org: Org; space: Space | undefined } | undefined;
  bootstrap: boolean;
  adminEnabled: boolean;
  /** A fresh UUID offered as the run worker and producers share. */
  scopeId: string;
  /** The operator console is served (BATON_CONSOLE on): its link is printed. */
  console?: boolean;
}

/** The caps a plan's limits put on the work of one team, in words; the null ones are no cap. */
export function capsInWords(limits: PlanLimits): string {
  const capped = [
    limits.operationsPerMonth !== null && `${limits.operationsPerMonth.toLocaleString('en-US')} operations a month`,
    limits.requestsPerMinute !== null && `${limits.requestsPerMinute.toLocaleString('en-US')} requests a minute`,
    limits.agentsAtOnce !== null && `${limits.agentsAtOnce.toLocaleString('en-US')} agents at once`,
    limits.activeRuns !== null && `${limits.activeRuns.toLocaleString('en-US')} active runs`,
    limits.activeTasks !== null && `${limits.activeTasks.toLocaleString('en-US')} active tasks`,
  ].filter((s): s is string => typeof s === 'string');
  return capped.length === 0 ? 'no caps on operations, rate, agents, active runs or active tasks' : `capped at ${capped.join(', ')}`;
}

const cli = 'npx baton-server';
const scopeAdvice = 'BATON_SCOPE names the run a worker and its producers share: any UUID, the same in every shell.';

function planLine(name: string, orgId: string, plan: Plan, limits: PlanLimits): string {
  const line = `Organization "${name}" (${orgId}) is on plan ${plan}: ${capsInWords(limits)}.`;
  if (plan === 'ENTERPRISE' && limits.requestsPerMinute === null) return `${line} (One team on one machine; BATON_BOOTSTRAP_PLAN=FREE on an empty store gives the hosted default.)`;
  return `${line} To lift them: ${cli} orgs plan ${orgId} --plan ENTERPRISE (docs/operator.md#limits-and-usage).`;
}

function keyAdvice(orgId: string, adminEnabled: boolean): string {
  return adminEnabled
    ? `A new key: ${cli} keys create ${orgId}   (with BATON_ADMIN_TOKEN set in that shell)`
    : `A new key: start the server with BATON_ADMIN_TOKEN=<a secret of yours>, then ${cli} keys create ${orgId}`;
}

/** The banner printed on stdout once the server listens. */
export function startBanner(f: BannerFacts): string {
  const lines = ['', `Baton is serving at ${f.address} (API reference: ${f.address}/docs).`];
  if (f.console) {
    const spaceId = f.created?.spaceId ?? f.existing?.space?.id;
    lines.push(`Operator console: ${f.address}/console${spaceId ? `/spaces/${spaceId}` : ''} (sign in with an API key, e.g. BATON_KEY).`);
  }
  if (f.created) {
    const c = f.created;
    lines.push(
      planLine(c.org.name, c.org.id, c.org.plan, effectiveLimits(c.org)),
      `Created its space "${c.space.name}" and a key with all four permissions. The key is shown only this once; keep it.`,
      'Paste these lines into each shell that runs a worker, a producer or the walkthrough:',
      '',
      `  export BATON_URL=${f.address}`,
      `  export BATON_SPACE=${c.spaceId}`,
      `  export BATON_KEY=${c.secret}`,
      `  export BATON_SCOPE=${f.scopeId}`,
      '',
      scopeAdvice,
    );
  } else if (f.existing) {
    const { org, space } = f.existing;
    lines.push(
      planLine(org.name, org.id, org.plan, effectiveLimits(org)),
      `${space ? `Its space "${space.name}" is below; its` : 'Its'} key was printed on the first start only. For a snippet:`,
      '',
      `  export BATON_URL=${f.address}`,
      ...(space ? [`  export BATON_SPACE=${space.id}`] : []),
      '  # BATON_KEY: the key printed on the first start',
      `  # ${keyAdvice(org.id, f.adminEnabled)}`,
      `  # BATON_SCOPE: any UUID, e.g. export BATON_SCOPE=$(node -e "console.log(crypto.randomUUID())")`,
      '',
      `Organizations and spaces: ${cli} orgs list, ${cli} spaces list ${org.id}.`,
    );
  } else {
    lines.push(
      f.bootstrap ? 'The store has no organization yet.' : 'Bootstrap is off (BATON_BOOTSTRAP=off): no organization is created at start.',
      f.adminEnabled
        ? `Create one with the operator API: ${cli} orgs create --name NAME, then spaces create and keys create (docs/operator.md).`
        : 'Start the server with BATON_ADMIN_TOKEN=<a secret of yours> to create organizations, spaces and keys (docs/operator.md).',
    );
  }
  return `${lines.join('\n')}\n`;
}
