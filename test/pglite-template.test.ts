import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDurablePglite } from '@baton-coordination/server/store/sql/pglite-durable';
import { usableTemplate } from '@baton-coordination/server/store/sql/pglite-template';

/**
 * A new embedded data directory is a copy of the build's template (server/dist/pglite-template,
 * written by `npm run build`), not a database made by initdb at start-up (docs/embedded-store.md).
 */
const builtTemplate = new URL('../server/dist/pglite-template', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'baton-template-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** pg_control begins with the cluster's system identifier, set once by initdb: a copy keeps it. */
const systemIdentifierIn = (dataDir: string): string => readFileSync(join(dataDir, 'global', 'pg_control')).readBigUInt64LE(0).toString();

async function systemIdentifierOpened(dataDir: string, templateDir: string): Promise<string> {
  const { db } = await openDurablePglite(dataDir, { templateDir });
  try {
    return (await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()')).rows[0]!.id;
  } finally {
    await db.close();
  }
}

describe('the embedded store template', () => {
  it('is built for the installed PGlite', () => {
    expect(usableTemplate(builtTemplate)).toBe(true);
  });

  it('seeds a new data directory: the copy opens with the template’s identity and without its marker', async () => {
    const dataDir = join(dir, 'new', 'data');
    expect(await systemIdentifierOpened(dataDir, builtTemplate)).toBe(systemIdentifierIn(builtTemplate));
    expect(existsSync(join(dataDir, 'baton-template.json'))).toBe(false);
  });

  it('copies again over a copy a crash cut short (no PG_VERSION yet)', async () => {
    const dataDir = join(dir, 'cut-short');
    cpSync(builtTemplate, dataDir, { recursive: true, filter: (path) => !path.endsWith('PG_VERSION') });
    rmSync(join(dataDir, 'base'), { recursive: true });
    expect(await systemIdentifierOpened(dataDir, builtTemplate)).toBe(systemIdentifierIn(builtTemplate));
  });

  it('is not used when another PGlite version made it', () => {
    const stale = join(dir, 'stale-template');
    cpSync(builtTemplate, stale, { recursive: true });
    writeFileSync(join(stale, 'baton-template.json'), JSON.stringify({ pglite: '0.0.1' }));
    expect(usableTemplate(stale)).toBe(false);
    expect(usableTemplate(join(dir, 'no-template-here'))).toBe(false);
  });
});
