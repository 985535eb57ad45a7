import { describe, expect, it } from 'vitest';
import { mutantsOf, offsetOf, planted, sourceHash, spreadSample, type MutationReport } from './mutants';

const source = 'export function open(n: number): boolean {\n  return n > 0;\n}\n';

function report(): MutationReport {
  return {
    files: {
      'core/src/x/rules.ts': {
        source,
        mutants: [
          { id: '1', mutatorName: 'EqualityOperator', replacement: 'n >= 0', status: 'Killed', location: { start: { line: 2, column: 10 }, end: { line: 2, column: 15 } } },
          { id: '2', mutatorName: 'BooleanLiteral', status: 'Ignored', location: { start: { line: 2, column: 10 }, end: { line: 2, column: 15 } } },
        ],
      },
    },
  };
}

describe('mutants from a Stryker report', () => {
  it('finds 1-based lines and columns in the source', () => {
    expect(source.slice(offsetOf(source, { line: 2, column: 10 }), offsetOf(source, { line: 2, column: 15 }))).toBe('n > 0');
  });

  it('plants a mutant by replacing exactly the text it covers', () => {
    const [mutant] = mutantsOf(report());
    expect(mutant).toMatchObject({ file: 'core/src/x/rules.ts', line: 2, original: 'n > 0', testStatus: 'Killed' });
    expect(planted(source, mutant!)).toBe('export function open(n: number): boolean {\n  return n >= 0;\n}\n');
  });

  it('leaves out mutants the report gives no replacement for', () => {
    expect(mutantsOf(report())).toHaveLength(1);
  });

  it('refuses to plant into a source that changed since the report', () => {
    const [mutant] = mutantsOf(report());
    expect(() => planted(`${source}// edited\n`, mutant!)).toThrow(/changed since the report/);
    expect(mutant!.sourceHash).toBe(sourceHash(source));
  });

  it('samples at most n mutants of each file, spread over it', () => {
    const many = Array.from({ length: 10 }, (_, i) => ({ ...mutantsOf(report())[0]!, key: `k${i}`, line: i }));
    expect(spreadSample(many, 3).map((m) => m.line)).toEqual([0, 3, 6]);
    expect(spreadSample(many, 20)).toHaveLength(10);
  });

  it('marks a mutant inside an assert call or an assert function as weakening an assertion', () => {
    const checked = 'export function assertOpen(n: number): void {\n  assert(n > 0, "closed");\n}\nexport const open = (n: number): boolean => n > 0;\n';
    const at = (line: number, column: number, end: number) => ({ start: { line, column }, end: { line, column: end } });
    const [inAssert, inPlain] = mutantsOf({
      files: {
        'core/src/x/rules.ts': {
          source: checked,
          mutants: [
            { id: '1', mutatorName: 'ConditionalExpression', replacement: 'true', status: 'Survived', location: at(2, 10, 15) },
            { id: '2', mutatorName: 'EqualityOperator', replacement: 'n >= 0', status: 'Killed', location: at(4, 45, 50) },
          ],
        },
      },
    });
    expect(inAssert).toMatchObject({ original: 'n > 0', assertion: true });
    expect(inPlain).toMatchObject({ original: 'n > 0', assertion: false });
  });
});
