import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';

// Code that is not behaviour, left out of mutation testing (stryker.config.mjs `ignorers`):
//
// - `plantedBugs.has('...')`: the switches the simulator's tests use to plant known bugs are off
//   in every real process, so a mutant that turns one off (or renames the bug) changes nothing,
//   nor does one in code that runs only while a switch is on (the right of `switch && ...`, the
//   branch taken when `switch && ...` holds). The code around the switch is still mutated: a
//   mutant that turns the bug on must be killed.
// - the message of `assert(condition, message)` and `unreachable(value, message)`: read by
//   people in logs, never by code; the condition itself is still mutated.

const isCallTo = (node, name) => node?.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === name;

const isSwitch = (node) => node?.type === 'CallExpression' && node.callee.type === 'MemberExpression'
  && node.callee.object.type === 'Identifier' && node.callee.object.name === 'plantedBugs'
  && node.callee.property.type === 'Identifier' && node.callee.property.name === 'has';

/** `switch`, or `switch && a && b ...`: false whenever the switch is off. */
const onlyWithSwitch = (node) => isSwitch(node) || (node?.type === 'LogicalExpression' && node.operator === '&&' && onlyWithSwitch(node.left));

/** @type {import('@stryker-mutator/api/ignore').Ignorer} */
const plantedBugSwitches = {
  shouldIgnore(path) {
    const { node, parentPath, key } = path;
    if (isSwitch(node)) return 'a planted-bug switch: off in every real process';
    const parent = parentPath?.node;
    const guarded = (parent?.type === 'LogicalExpression' && parent.operator === '&&' && key === 'right' && onlyWithSwitch(parent.left))
      || ((parent?.type === 'IfStatement' || parent?.type === 'ConditionalExpression') && key === 'consequent' && onlyWithSwitch(parent.test));
    return guarded ? 'runs only while a planted bug is switched on' : undefined;
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
