import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';

/** One citation a reader of a clone could not follow. */
export interface Finding {
  file: string;
  line: number;
  problem: string;
}

/**
 * Citations of material that lives beside a checkout of this workplace, never in it. The
 * patterns are built from parts so that this file, which is tracked too, does not cite them.
 */
const outsideCitations: { pattern: RegExp; what: string }[] = [
  { pattern: new RegExp(['\\.\\.', 'shared'].join('/')), what: 'a path outside the repository' },
  { pattern: new RegExp(['shared', '(spec|docs)'].join('/')), what: 'the workplace\'s shared spec or docs' },
  { pattern: new RegExp(`(^|[\\s'"\`(\\[])${['', 'work', ''].join('/')}`), what: 'an absolute path of the workplace' },
  { pattern: new RegExp(`[Dd]ecisions(\\.md)? ${'\u00a7'}`), what: 'a section of a decisions file outside the repository' },
  { pattern: new RegExp(['decisions', 'md'].join('\\.')), what: 'a decisions file outside the repository' },
  { pattern: new RegExp(['coordination-api', 'md'].join('\\.')), what: 'an API spec outside the repository' },
  // The outside spec by another name: a parenthesis opening on the word and a comma or colon, its
  // possessive, or the word before a quoted part's title. Only lower case or a digit may follow the
  // colon, which keeps out a parameter typed as, say, a JobSpec.
  { pattern: new RegExp(`\\(${'spec'}[,:] [a-z0-9]|\\b[Tt]he ${'spec'}'s\\b|\\b[Ss]${'pec'} "`), what: 'the API spec outside the repository (docs/api.md is the reference)' },
];

/** A docs path written from the repository's root, as comments and the README write them. */
const docsPath = /(?<![\w./-])docs\/[\w./-]*?\.md\b/g;
/** A Markdown link to another Markdown file, relative to the linking file. */
const markdownLink = /\]\(([^)\s#]+\.md)(#[^)\s]*)?\)/g;

/**
 * What in one file cites something a clone does not have: a path or document outside the
 * repository, or a docs/*.md file (design records included) that is not tracked. `tracked` is
 * the set of repository paths, `/`-separated from the root.
 */
export function findUnreachableCitations(file: string, text: string, tracked: ReadonlySet<string>): Finding[] {
  const findings: Finding[] = [];
  const isMarkdown = file.endsWith('.md');
  text.split('\n').forEach((content, index) => {
    const line = index + 1;
    for (const { pattern, what } of outsideCitations) {
      if (pattern.test(content)) findings.push({ file, line, problem: `cites ${what}: ${content.trim()}` });
    }
    for (const [path] of content.matchAll(docsPath)) {
      if (!tracked.has(path)) findings.push({ file, line, problem: `cites ${path}, which the repository does not have` });
    }
    if (!isMarkdown) return;
    for (const [, target] of content.matchAll(markdownLink)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      const path = posix.normalize(posix.join(posix.dirname(file), target!));
      if (!tracked.has(path)) findings.push({ file, line, problem: `links to ${target}, which the repository does not have (${path})` });
    }
  });
  return findings;
}

/** Extensions of tracked files that are not text. */
const binary = /\.(png|jpe?g|gif|ico|webp|woff2?|ttf|gz|tgz|zip|wasm|data)$/i;

/**
 * Tools' records kept in the repository, not prose: Stryker's incremental file (reports/) holds
 * the path it ran in, rewritten by every run, and cites nothing.
 */
const toolRecords = /^reports\//;

/** The repository's root, found from this file. */
export function repositoryRoot(): string {
  return execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: dirname(new URL(import.meta.url).pathname), encoding: 'utf8' }).trim();
}

/** Every tracked text file of the repository checked as above. */
export function findUnreachableCitationsInRepository(root: string): Finding[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\0').filter((f) => f.length > 0);
  const tracked = new Set(files);
  const findings: Finding[] = [];
  for (const file of files) {
    if (binary.test(file) || toolRecords.test(file)) continue;
    let text: string;
    try {
      text = readFileSync(join(root, file), 'utf8');
    } catch {
      continue; // listed in the index but removed from the work tree: nothing to read
    }
    if (text.includes('\0')) continue;
    findings.push(...findUnreachableCitations(file, text, tracked));
  }
  return findings;
}
