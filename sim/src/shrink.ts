import { faultNames } from './faults';
import { simulate, type SimResult } from './simulation';
import { agentKinds } from './swarm';

/**
 * Reduces a failing run to a smaller one that still fails: fewer agents, fewer steps, fewer
 * faults, fewer agent kinds, trying each reduction in turn and keeping it when the run still fails, until none
 * helps (or the budget of attempts runs out). Any failure counts, not only the original one:
 * a smaller run that fails differently is still a smaller bug report.
 */
export async function shrink(failing: SimResult, maxRuns = 80, onStep?: (result: SimResult) => void): Promise<SimResult> {
  let best = failing;
  let runs = 0;
  const tryConfig = async (config: SimResult['config']): Promise<boolean> => {
    if (runs++ >= maxRuns) return false;
    const result = await simulate(config);
    if (result.violations.length === 0) return false;
    best = result;
    onStep?.(result);
    return true;
  };
  for (let progress = true; progress && runs < maxRuns; ) {
    progress = false;
    for (const candidate of candidates(best.config)) {
      if (await tryConfig(candidate)) {
        progress = true;
        break;
      }
    }
  }
  return best;
}

function* candidates(config: SimResult['config']): Generator<SimResult['config']> {
  if (config.agents > 1) yield { ...config, agents: Math.max(1, Math.floor(config.agents / 2)) };
  if (config.steps > 50) yield { ...config, steps: Math.max(50, Math.floor(config.steps / 2)) };
  for (const name of faultNames) if (config.faults[name] !== 0) yield { ...config, faults: { ...config.faults, [name]: 0 } };
  for (const kind of agentKinds) if (kind !== 'spender' && config.weights[kind] !== 0) yield { ...config, weights: { ...config.weights, [kind]: 0 } };
  if (config.agents > 1) yield { ...config, agents: config.agents - 1 };
  if (config.steps > 50) yield { ...config, steps: Math.max(50, Math.floor(config.steps * 0.8)) };
}
