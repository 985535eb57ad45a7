import type { SqlDriver, SqlParam, SqlQueryable } from '@baton-coordination/server/store/sql/driver';

/** One node of EXPLAIN (FORMAT JSON)'s plan, as far as the checks read it. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

export interface ExplainedStatement {
  text: string;
  plan: PlanNode;
}

const explainable = /^\s*(SELECT|WITH|UPDATE|INSERT|DELETE)\b/i;
const rolledBack = new Error('explaining-driver: roll back');

async function explainIn(q: SqlQueryable, text: string, params: readonly SqlParam[] | undefined): Promise<PlanNode> {
  const [row] = await q.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params);
  return row!['QUERY PLAN'][0].Plan;
}

/**
 * A driver that runs EXPLAIN (ANALYZE, BUFFERS) of every data statement before running it for
 * real, while `recording` is on, and keeps the plans: so a test can check the plans of exactly
 * the statements the store sends. Inside a transaction the explained run happens in a savepoint
 * that is rolled back (its writes, its locks, and its failure if it fails, are undone); outside
 * one, in a transaction of its own that is rolled back. Test-only: it serializes what the real
 * driver pipelines.
 */
export class ExplainingDriver implements SqlDriver {
  readonly explained: ExplainedStatement[] = [];
  recording = false;

  constructor(private readonly inner: SqlDriver) {}

  get kind(): SqlDriver['kind'] {
    return this.inner.kind;
  }

  query<R>(text: string, params?: readonly SqlParam[]): Promise<R[]> {
    return this.inner.query<R>(text, params).then(async (rows) => {
      await this.explainAlone(text, params);
      return rows;
    });
  }

  async write(text: string, params?: readonly SqlParam[]): Promise<void> {
    await this.inner.write(text, params);
    await this.explainAlone(text, params);
  }

  exec(script: string): Promise<void> {
    return this.inner.exec(script);
  }

  transaction<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T> {
    return this.inner.transaction((q) => fn(this.explainingIn(q)));
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private explainingIn(q: SqlQueryable): SqlQueryable {
    const before = async (text: string, params?: readonly SqlParam[]): Promise<void> => {
      if (!this.recording || !explainable.test(text)) return;
      await q.exec('SAVEPOINT explaining');
      try {
        this.explained.push({ text, plan: await explainIn(q, text, params) });
      } catch {
        // The statement fails for real too (a lost race, a guard): the real run reports it.
      }
      await q.exec('ROLLBACK TO SAVEPOINT explaining');
    };
    return {
      query: async <R>(text: string, params?: readonly SqlParam[]) => {
        await before(text, params);
        return q.query<R>(text, params);
      },
      write: async (text, params) => {
        await before(text, params);
        await q.write(text, params);
      },
      exec: (script) => q.exec(script),
    };
  }

  /** Explains an autocommit statement after it ran (it has no transaction to roll back into). */
  private async explainAlone(text: string, params?: readonly SqlParam[]): Promise<void> {
    if (!this.recording || !explainable.test(text)) return;
    await this.inner
      .transaction(async (q) => {
        this.explained.push({ text, plan: await explainIn(q, text, params) });
        throw rolledBack;
      })
      .catch((error: unknown) => {
        if (error !== rolledBack) return; // a statement that fails alone failed for real already
      });
  }
}
