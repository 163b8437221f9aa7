// Reads a CPU profile of the server (node --cpu-prof, as profile-run.ts writes it) and says where
// its time went per model call: busy time, the largest groups (the openai SDK, undici, SQLite, …),
// the functions with the most self time, and the inclusive time of a few frames worth watching.
// Inclusive means "on the stack when sampled": work resumed later by a promise or an I/O callback
// has other frames under it, so these undercount asynchronous paths; V8 also folds inlined
// functions into their caller (JSON.stringify never shows as a frame of its own).
//   node --import tsx bench/src/profile-summary.ts PROFILE_DIR [--from=µs --to=µs] [--calls=N] [--top=25]
// profile-run.ts prints the --from/--to window (the measured rounds, on the same monotonic clock
// as the profile's timestamps) and the number of model calls in it. Figures from one profile are
// samples, not exact: compare them within one run of the driver.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const option = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const target = process.argv.slice(2).find((arg) => !arg.startsWith('--'));
if (!target) throw new Error('usage: profile-summary.ts PROFILE_DIR|FILE [--from=µs --to=µs] [--calls=N] [--top=N]');

/** The main thread's profile: the largest in the folder (tsx's loader thread writes a small one). */
function profilePath(path: string): string {
  if (!statSync(path).isDirectory()) return path;
  const files = readdirSync(path).filter((name) => name.endsWith('.cpuprofile'));
  if (!files.length) throw new Error(`no .cpuprofile in ${path}`);
  return join(path, files.sort((a, b) => statSync(join(path, b)).size - statSync(join(path, a)).size)[0]!);
}

const profile = JSON.parse(readFileSync(profilePath(target), 'utf8')) as CpuProfile;
const from = Number(option('from') ?? profile.startTime);
const to = Number(option('to') ?? profile.endTime);
const calls = Number(option('calls') ?? 1);
const top = Number(option('top') ?? 25);

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

/** Where a frame's code lives, in a few words. */
function groupOf(frame: CallFrame): string | undefined {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName === '(program)') return 'V8 / native, no JS frame';
    if (functionName === '(idle)') return 'idle';
    return undefined; // a native function: it belongs to its caller's group
  }
  const nodeModule = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nodeModule) return nodeModule[1] === 'libsql' ? 'libsql (SQLite)' : nodeModule[1]!;
  if (url.includes('/backend/src/')) return `Stepwise ${url.split('/backend/src/')[1]!.split('/')[0]}/`;
  if (url.startsWith('node:internal/deps/undici')) return 'undici (fetch)';
  if (url.startsWith('node:internal/webstreams')) return 'web streams';
  if (url.startsWith('node:internal/modules') || url.startsWith('node:internal/deps/cjs-module-lexer')) return 'module loading';
  if (url.startsWith('node:')) return `node ${url.replace(/^node:(internal\/)?/, '').split('/')[0]}`;
  if (url.startsWith('wasm://')) return 'wasm';
  return url;
}

/** A group for a sample's leaf: its own, or the nearest caller's for native code. */
function leafGroup(id: number): string {
  for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
    const group = groupOf(byId.get(current)!.callFrame);
    if (group) return group;
  }
  return 'native';
}

const shortUrl = (url: string) => url.replace(/^file:\/\/\/.*?node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(/^file:\/\/\/work\/main\//, '');
const frameName = (frame: CallFrame) => `${frame.functionName || '(anonymous)'} ${frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '(native)'}`;

/** Inclusive time of frames matching these tests: each sample counts once per watched frame. */
const modelHttpPath =
  /node_modules\/openai\/|node:internal\/deps\/undici|node:internal\/webstreams|node:_http_|http-transport\.ts|response-body\.ts|reply-reader\.ts|reply-assembler\.ts/;
const watched: Record<string, (frame: CallFrame) => boolean> = {
  'the model call over HTTP: request, response, reading the reply (SDK + undici + web streams, or node:http; inclusive)': (frame) =>
    modelHttpPath.test(frame.url) || (frame.url.endsWith('openai-llm-client.ts') && frame.functionName === 'attempt'),
  'openai SDK (inclusive of the fetch it calls)': (frame) => frame.url.includes('node_modules/openai/'),
  'undici / fetch (inclusive)': (frame) => frame.url.startsWith('node:internal/deps/undici'),
  'node:http client (inclusive)': (frame) => frame.url.startsWith('node:_http_') || frame.url.endsWith('http-transport.ts'),
  'SQLite statements (libsql, inclusive)': (frame) => frame.url.includes('node_modules/libsql'),
  'WebSocket frames (ws, inclusive)': (frame) => frame.url.includes('node_modules/ws/'),
  'ToolRegistry.schemas': (frame) => frame.url.endsWith('tool-registry.ts') && frame.functionName.includes('schemas'),
  'prompt rendering (handlebars)': (frame) => frame.url.includes('node_modules/handlebars'),
  zod: (frame) => frame.url.includes('node_modules/zod'),
  'pino (logs)': (frame) => frame.url.includes('node_modules/pino'),
  'reading the reply (reply-reader, response-body)': (frame) => /reply-reader\.ts|response-body\.ts|reply-assembler\.ts/.test(frame.url),
  'reading session files for the prompt (readdir)': (frame) => frame.url.endsWith('session-files.ts'),
  "the session's history read for a run (listMessages)": (frame) => frame.functionName === 'listMessages',
  'the request body encoded (encodeRequest)': (frame) => frame.functionName === 'encodeRequest',
};

const self = new Map<string, number>();
const groups = new Map<string, number>();
const inclusive = new Map<string, number>(Object.keys(watched).map((name) => [name, 0]));
let busy = 0;
let idle = 0;
let time = profile.startTime;
for (let index = 0; index < profile.samples.length; index++) {
  time += profile.timeDeltas[index]!;
  // A sample stands for the time until the next one.
  const weight = profile.timeDeltas[index + 1] ?? 0;
  if (time < from || time > to) continue;
  const id = profile.samples[index]!;
  const leaf = byId.get(id)!.callFrame;
  if (leaf.functionName === '(idle)') {
    idle += weight;
    continue;
  }
  busy += weight;
  const name = frameName(leaf);
  self.set(name, (self.get(name) ?? 0) + weight);
  const group = leafGroup(id);
  groups.set(group, (groups.get(group) ?? 0) + weight);
  const seen = new Set<string>();
  for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
    const frame = byId.get(current)!.callFrame;
    for (const [watch, test] of Object.entries(watched)) if (!seen.has(watch) && test(frame)) seen.add(watch);
  }
  for (const watch of seen) inclusive.set(watch, inclusive.get(watch)! + weight);
}

const perCall = (us: number) => (us / calls).toFixed(0).padStart(6);
const share = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
console.log(`window ${((to - from) / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s, ${calls} model calls`);
console.log(`busy per model call: ${perCall(busy).trim()} µs\n`);
console.log('µs/call  share  group (self time of the leaf frame; native code counted with its caller)');
for (const [group, us] of sorted(groups).slice(0, top)) console.log(`${perCall(us)} ${share(us)}  ${group}`);
console.log('\nµs/call  share  function (self time)');
for (const [name, us] of sorted(self).slice(0, top)) console.log(`${perCall(us)} ${share(us)}  ${name}`);
console.log('\nµs/call  share  inclusive');
for (const [name, us] of sorted(inclusive)) console.log(`${perCall(us)} ${share(us)}  ${name}`);
