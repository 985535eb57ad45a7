import { describe, expect, it } from 'vitest';
import { findUnreachableCitations, findUnreachableCitationsInRepository, repositoryRoot, type Finding } from './support/stands-alone';

/**
 * A clone of this repository documents itself: no comment or doc cites a path or document
 * outside it, and every docs/ file a comment or doc names is there. The design record is
 * docs/design/ (docs/design/README.md); the API reference is docs/api.md.
 */
describe('the repository stands alone', () => {
  it('has no tracked file citing a path outside it or a docs file it lacks', () => {
    const findings = findUnreachableCitationsInRepository(repositoryRoot());
    expect(findings.map((f: Finding) => `${f.file}:${f.line}: ${f.problem}`)).toEqual([]);
  });

  // The samples below build their bad citations from parts, so that this file, tracked too,
  // does not cite them itself.
  describe('the checker', () => {
    const tracked = new Set(['docs/api.md', 'docs/design/0005-idempotency-keys.md', 'docs/design/README.md', 'core/src/x.ts']);
    const section = '\u00a7';

    it('reports a comment citing a decisions section, with its file and line', () => {
      const sample = ['/** Replays for 24 hours. */', `/** Method, path and body, hashed (decisions ${section}4). */`].join('\n');
      expect(findUnreachableCitations('core/src/x.ts', sample, tracked)).toEqual([
        { file: 'core/src/x.ts', line: 2, problem: expect.stringContaining('decisions file outside the repository') },
      ]);
    });

    it('reports paths into the shared workplace and absolute workplace paths', () => {
      const sample = ['The API is specified in `../' + 'shared/' + 'spec/coordination-api' + '.md`.', 'See /' + 'work/notes/common.md.'].join('\n');
      const lines = findUnreachableCitations('README.md', sample, tracked).map((f) => f.line);
      expect(lines).toContain(1);
      expect(lines).toContain(2);
    });

    it('reports the outside spec cited by name, and leaves code that names a variable spec alone', () => {
      const spec = 'spec';
      const sample = [`/** Lease bounds (${spec}, fixed API bounds). */`, `/** The ${spec}'s plan table. */`, `function run(${spec}: JobSpec) {}`, `items.map((${spec}) => ${spec}.key);`].join('\n');
      expect(findUnreachableCitations('core/src/x.ts', sample, tracked).map((f) => f.line)).toEqual([1, 2]);
    });

    it('reports a docs path or a design record that does not exist, and passes those that do', () => {
      const missingRecord = 'docs/design/' + '0099-not-written.md';
      const missingDoc = 'docs/' + 'nowhere.md';
      const sample = [
        '// docs/design/0005-idempotency-keys.md: replies replay for 24 hours.',
        `// ${missingRecord} says so.`,
        '// see docs/api.md "Limits".',
        `// see ${missingDoc}.`,
      ].join('\n');
      expect(findUnreachableCitations('core/src/x.ts', sample, tracked).map((f) => [f.line, f.problem])).toEqual([
        [2, `cites ${missingRecord}, which the repository does not have`],
        [4, `cites ${missingDoc}, which the repository does not have`],
      ]);
    });

    it('resolves Markdown links from the linking file', () => {
      const sample = ['Why: [design 0005](design/0005-idempotency-keys.md#decision).', 'Gone: [design 0042](design/0042-gone.md).', 'Web: [River](https://riverqueue.com/docs.md).'].join('\n');
      expect(findUnreachableCitations('docs/api.md', sample, tracked).map((f) => f.line)).toEqual([2]);
      expect(findUnreachableCitations('docs/design/README.md', '[0005](0005-idempotency-keys.md) and [api](../api.md)', tracked)).toEqual([]);
    });
  });
});
