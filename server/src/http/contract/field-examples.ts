/**
 * Examples for the document's string fields that carry a pattern (timestamps, ids, amounts, the
 * U+0000 guard of every name), so a renderer shows a value a person would send instead of one
 * it generates from the regular expression. By field name first, then by format or pattern.
 */

type Json = Record<string, any>;

const byName: Record<string, string> = {
  name: 'summaries',
  taskKey: 'summarize-report-2026-11',
  workKey: 'summarize-report-2026-11',
  subscriberId: 'dashboard',
  holder: 'summarizer',
  holderSession: 'summarizer-host1-31337',
  recipientId: 'reviewer-agent',
  claimKey: 'deploy-lock',
  arrivalKey: 'shard-2',
  timerKey: 'nightly-report',
  workLimit: 'crawler-slots',
  reason: 'provider answered 429',
  currency: 'USD',
  url: 'https://hooks.example.com/baton',
  eventTypes: 'task.*',
  eventId: '1042',
  cursor: '1042',
  after: '1042',
};

const byFormat: Record<string, string> = {
  'date-time': '2026-11-27T17:00:00.000Z',
  uuid: '7d3c2b1a-4e5f-4a6b-8c9d-0e1f2a3b4c5d',
};

function exampleFor(name: string, schema: Json): string | undefined {
  if (schema.format && byFormat[schema.format]) return byFormat[schema.format];
  if (byName[name] !== undefined) return byName[name];
  // Minor units, and journal positions.
  if (schema.pattern === '^\\d+$') return '2500';
  if (schema.pattern === '^\\d{1,40}$') return '1042';
  return undefined;
}

/** Sets `examples` on every patterned string schema under `node` that has none, in place. */
export function addFieldExamples(node: unknown, name = ''): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const child of node) addFieldExamples(child, name);
    return;
  }
  const schema = node as Json;
  if (schema.type === 'string' && (schema.pattern || schema.format) && schema.example === undefined && schema.examples === undefined) {
    const example = exampleFor(name, schema);
    if (example !== undefined) schema.examples = [example];
  }
  // A Parameter Object names the schema it holds; an array's items and a union's members keep the name they describe.
  const named = typeof schema.in === 'string' && typeof schema.name === 'string' ? schema.name : name;
  for (const [key, child] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples') continue;
    if (key === 'properties' && child && typeof child === 'object') {
      for (const [property, value] of Object.entries(child as Json)) addFieldExamples(value, property);
    } else addFieldExamples(child, named);
  }
}
