import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';

// Code that is not behaviour, left out of mutation testing (stryker.config.mjs `ignorers`):
//
// - `plantedBugs.has('...')`: the switches the simulator's tests use to plant known bugs are off
//   in every real process, so a mutant that turns one off (or renames the bug) changes nothing.
//   The code around the switch is still mutated: a mutant that turns the bug on must be killed.
// - the message of `assert(condition, message)` and `unreachable(value, message)`: read by
//   people in logs, never by code; the condition itself is still mutated.

const isCallTo = (node, name) => node?.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === name;

/** @type {import('@stryker-mutator/api/ignore').Ignorer} */
const plantedBugSwitches = {
  shouldIgnore(path) {
    const { node } = path;
    const isSwitch = node.type === 'CallExpression' && node.callee.type === 'MemberExpression'
      && node.callee.object.type === 'Identifier' && node.callee.object.name === 'plantedBugs'
      && node.callee.property.type === 'Identifier' && node.callee.property.name === 'has';
    return isSwitch ? 'a planted-bug switch: off in every real process' : undefined;
  },
};

/** @type {import('@stryker-mutator/api/ignore').Ignorer} */
const assertionMessages = {
  shouldIgnore(path) {
    if (path.listKey !== 'arguments' || path.key !== 1) return undefined;
    const call = path.parentPath?.node;
    return isCallTo(call, 'assert') || isCallTo(call, 'unreachable') ? 'an assertion message: read by people, not code' : undefined;
  },
};

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'planted-bug-switches', plantedBugSwitches),
  declareValuePlugin(PluginKind.Ignore, 'assertion-messages', assertionMessages),
];
