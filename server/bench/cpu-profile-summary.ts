/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, e.g. the server's from BENCH_SERVER_CPU_PROF):
 * where the busy time went, by owner (a package, Node's internals, Baton's own workspaces, the
 * garbage collector) and by function, as self time. Idle time is left out of the shares.
 *
 *   npx tsx server/bench/cpu-profile-summary.ts /tmp/prof/CPU.*.cpuprofile [--top 30] [--per N]
 *
 * `--per N` also prints microseconds per unit of work: the busy time divided by N (e.g. the jobs
 * the run served, or its requests).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * What a sample was doing, judged from its whole stack: start-up (module loading, under any
 * frame), else by its innermost frame's owner. Order matters: the first rule that matches wins.
 * `writev` stands apart: V8 samples wall-clock time, and a thread preempted inside the system
 * call (on this 2-vCPU machine, the PostgreSQL backend it just woke runs at once) is sampled
 * there; /proc's stime says how little of it is CPU.
 */
const startupFrames = /^(Module\._load|compileSourceTextModule|loadAndTranslate|moduleStrategy|cjsLoader)$/;
const categories: [string, (owner: string, functionName: string) => boolean][] = [
  ['socket writes (writev: system call, and time preempted in it)', (_o, f) => f === 'writev'],
  ['garbage collection', (o) => o === '(garbage collector)'],
  ['hashing and random (node:crypto: idempotency fingerprints, key checks, ids)', (o) => /^node:internal\/crypto/.test(o)],
  ['promise and tick scheduling (await, microtasks)', (o) => o === 'node:internal/process'],
  ['PostgreSQL client (pg, pg-protocol, the statement batch, row decoding)', (o) => /^(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+|packet-reader|server\/store\/sql)$/.test(o)],
  ['HTTP parsing and streams (node:_http_*, net, streams)', (o) => /^node:(_http_|net|internal|events|buffer|stream)/.test(o) || o === '(native)'],
  ['fastify (routing, hooks, reply)', (o) => /^(fastify|find-my-way|light-my-request|avvio|fast-json-stringify|@fastify\/.*|secure-json-parse|fastify-type-provider-zod|process-warning|toad-cache)$/.test(o)],
  ['zod (request validation, reply shapes)', (o) => o === 'zod'],
  ['logging (pino)', (o) => /^(pino|@pinojs\/.*|pino-std-serializers|sonic-boom|thread-stream|fast-redact)$/.test(o)],
  ['Baton server: HTTP layer (auth, idempotency, limits, routes)', (o) => /^server\/(http|limits|host|notify|webhooks|\.)/.test(o)],
  ['Baton server: SQL repositories', (o) => o.startsWith('server/store')],
  ['Baton core (rules, services, store wrappers)', (o) => o.startsWith('core/')],
];

export function categorise(profile: Profile): { busyUs: number; byCategory: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n.id);
  const startup = new Map<number, boolean>();
  const inStartup = (id: number | undefined): boolean => {
    if (id === undefined) return false;
    const known = startup.get(id);
    if (known !== undefined) return known;
    const is = startupFrames.test(nodes.get(id)!.callFrame.functionName) || inStartup(parents.get(id));
    startup.set(id, is);
    return is;
  };
  // A native frame (a builtin, a C++ binding) counts for the JavaScript that called it; writev
  // and V8's pseudo-frames stay themselves.
  const frameWithUrl = (id: number): ProfileNode['callFrame'] => {
    let at: number | undefined = id;
    while (at !== undefined) {
      const frame = nodes.get(at)!.callFrame;
      if (frame.url !== '' || frame.functionName === 'writev' || frame.functionName.startsWith('(')) return frame;
      at = parents.get(at);
    }
    return nodes.get(id)!.callFrame;
  };
  const byCategory = new Map<string, number>();
  let busyUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!.callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') return;
    const us = profile.timeDeltas[i] ?? 0;
    const owner = ownerOf(frameWithUrl(id).url, frame.functionName);
    const category = inStartup(id) || owner === 'tsx' ? 'start-up (loading modules)' : (categories.find(([, test]) => test(owner, frame.functionName))?.[0] ?? `other: ${owner}`);
    busyUs += us;
    byCategory.set(category, (byCategory.get(category) ?? 0) + us);
  });
  return { busyUs, byCategory };
}

/** Who owns a frame: an npm package, Node's own code, a Baton workspace, or V8's pseudo-frames. */
export function ownerOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/').slice(0, 2).join('/');
  const workspace = /\/(core|server|runtime)\/src\/(.*)$/.exec(url);
  if (workspace) return `${workspace[1]}/${workspace[2]!.split('/').slice(0, -1).join('/') || '.'}`;
  return url;
}

export function summarise(profile: Profile): { busyUs: number; byOwner: Map<string, number>; byFunction: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busyUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!.callFrame;
    if (frame.functionName === '(idle)') return;
    const us = profile.timeDeltas[i] ?? 0;
    busyUs += us;
    const owner = ownerOf(frame.url, frame.functionName);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
    const where = frame.url === '' ? '' : ` ${frame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${frame.lineNumber + 1}`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  });
  return { busyUs, byOwner, byFunction };
}

function table(title: string, entries: Map<string, number>, busyUs: number, top: number, per: number | undefined): string {
  const rows = [...entries].sort((a, b) => b[1] - a[1]).slice(0, top);
  const head = per === undefined ? '| share | ms | what |\n| ---: | ---: | --- |' : '| share | ms | µs per unit | what |\n| ---: | ---: | ---: | --- |';
  const lines = rows.map(([name, us]) => {
    const share = `${((100 * us) / busyUs).toFixed(1)} %`;
    const ms = (us / 1000).toFixed(0);
    return per === undefined ? `| ${share} | ${ms} | ${name} |` : `| ${share} | ${ms} | ${(us / per).toFixed(1)} | ${name} |`;
  });
  return [`${title}`, '', head, ...lines, ''].join('\n');
}

function main(argv: string[]): void {
  const files = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  const option = (name: string): number | undefined => {
    const at = argv.indexOf(name);
    return at === -1 ? undefined : Number(argv[at + 1]);
  };
  const top = option('--top') ?? 30;
  const per = option('--per');
  for (const file of files) {
    const { busyUs, byOwner, byFunction } = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
    console.log(`${file}: ${(busyUs / 1000).toFixed(0)} ms busy${per === undefined ? '' : `, ${(busyUs / per).toFixed(1)} µs per unit`}\n`);
    const { byCategory } = categorise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
    console.log(table('By what it was doing (self time, judged by stack)', byCategory, busyUs, top, per));
    console.log(table('By owner (self time)', byOwner, busyUs, top, per));
    console.log(table('By function (self time)', byFunction, busyUs, top, per));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
