import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eventTypes } from './model';

describe('event types', () => {
  it('are aggregate.verb in snake case', () => {
    for (const type of Object.values(eventTypes)) expect(type).toMatch(/^[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*$/);
  });

  it('are each documented in docs/events.md', () => {
    const doc = readFileSync(new URL('../../../docs/events.md', import.meta.url), 'utf8');
    for (const type of Object.values(eventTypes)) expect(doc).toContain(`\`${type}\``);
  });
});
