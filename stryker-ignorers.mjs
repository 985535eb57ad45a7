import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';

// Code that is not behaviour, left out of mutation testing (stryker.config.mjs `ignorers`):
//
// - the message of `assert(condition, message)` and `unreachable(value, message)`: read by
//   people in logs, never by code; the condition itself is still mutated.

const isCallTo = (node, name) => node?.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === name;

/** @type {import('@stryker-mutator/api/ignore').Ignorer} */
const assertionMessages = {
  shouldIgnore(path) {
    if (path.listKey !== 'arguments' || path.key !== 1) return undefined;
    const call = path.parentPath?.node;
    return isCallTo(call, 'assert') || isCallTo(call, 'unreachable') ? 'an assertion message: read by people, not code' : undefined;
  },
};

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'assertion-messages', assertionMessages),
];
