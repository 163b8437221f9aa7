import { isMap, LineCounter, stringify } from 'yaml';
import { GRAPH_MAX_NODES, parseBounded, renderedNodes } from './graph-bounds.ts';
import { checkGraph, GraphError, TaskGraph } from './task-graph.ts';

export * from './task-graph.ts';

export const GRAPH_FENCE = 'yaml TASK_GRAPH_V2';

/**
 * The document's bounds: one size for what is uploaded, written (by anyone: the strategy,
 * write_file, an upload) and read, checked before anything is parsed, so a document the server
 * wrote can always be read back; at most this many tasks; the graph's YAML within the bounds of
 * graph-bounds.ts (lines, and the nodes and depth the parser builds, counted as it parses). YAML
 * aliases are refused.
 */
export const STATE_DOC_MAX_BYTES = 1024 * 1024;

/** A ledger line is cut to this many characters when the document must shrink to fit. */
const LEDGER_LINE_MAX_CHARS = 1_000;

/** Everything the document holds, its sections in the seed's order. */
export interface ResearchState {
  goal: string;
  constraints: string[];
  bestAnswer: string;
  graph: TaskGraph;
  /** Results ledger lines ("- 1.2: summary"), evidence ledger lines, verifier status lines, history log lines. */
  results: string[];
  evidence: string[];
  verifier: string[];
  history: string[];
}

const SECTIONS = [
  'Problem spec',
  'Current best answer',
  'Task graph',
  'Task board',
  'Results ledger',
  'Evidence ledger',
  'Verifier status',
  'History log',
] as const;

/** The document: header, problem spec, current best answer, task graph (YAML), task board, results, evidence, verifier status, history log. */
export function renderState(state: ResearchState): string {
  const board = state.graph.stages
    .map((stage) =>
      [
        `### Stage ${stage.id}: ${flat(stage.name)} (${stage.status}${stage.verdict ? `, ${stage.verdict}` : ''})`,
        ...stage.tasks.map(
          (task) =>
            `- [${task.status === 'done' || task.status === 'skipped' || task.status === 'superseded' ? 'x' : ' '}] ${task.id} ${flat(task.title)} (${task.agent}, ${task.status})`,
        ),
      ].join('\n'),
    )
    .join('\n\n');
  const lines = (items: string[], empty: string) => (items.length ? items.map(inert).join('\n') : empty);
  return [
    `# Research state`,
    '',
    `Graph version ${state.graph.version}. Edit the task graph below (statuses, tasks, dependencies) between runs; the next run reads it back and checks it.`,
    '',
    `## ${SECTIONS[0]}`,
    '',
    inert(state.goal),
    ...(state.constraints.length ? ['', 'Constraints:', ...state.constraints.map((constraint) => `- ${flat(constraint)}`)] : []),
    '',
    `## ${SECTIONS[1]}`,
    '',
    inert(state.bestAnswer) || '(none yet)',
    '',
    `## ${SECTIONS[2]}`,
    '',
    `\`\`\`${GRAPH_FENCE}`,
    graphYaml(state.graph),
    '```',
    '',
    `## ${SECTIONS[3]}`,
    '',
    board,
    '',
    `## ${SECTIONS[4]}`,
    '',
    lines(state.results, '(none yet)'),
    '',
    `## ${SECTIONS[5]}`,
    '',
    lines(state.evidence, '(none yet)'),
    '',
    `## ${SECTIONS[6]}`,
    '',
    lines(state.verifier, '(none yet)'),
    '',
    `## ${SECTIONS[7]}`,
    '',
    lines(state.history, '(empty)'),
    '',
  ].join('\n');
}

/**
 * The graph as the document holds it: block style, every string on one line (never a block
 * scalar), so its lines and nodes are what `renderedNodes` counts.
 */
function graphYaml(graph: TaskGraph): string {
  return stringify(graph, { lineWidth: 0, blockQuote: false }).trimEnd();
}

/**
 * Text from a model or a person, made inert in the document: a line that would read as a heading
 * or a code fence (a forged section, a second graph block) gets a backslash in front, which
 * Markdown shows as nothing. A line that already starts with backslashes before one gets one more,
 * so `restore` gives back exactly the text that was written (an answer with `## ` headings and
 * code fences round-trips).
 */
export function inert(text: string): string {
  return text.replace(/^([ \t]*)(\\*)(#|```|~~~)/gm, '$1\\$2$3');
}

/** The text `inert` was given, from what it wrote. */
export function restore(text: string): string {
  return text.replace(/^([ \t]*)\\(\\*)(#|```|~~~)/gm, '$1$2$3');
}

/** One line of text: a title or a name never spans lines. */
function flat(text: string): string {
  return inert(text.replace(/\s*\n\s*/g, ' '));
}

/**
 * The state as it can be written: when its document would pass STATE_DOC_MAX_BYTES, long ledger
 * lines are cut, then the oldest evidence, history and results lines give way (a line says how
 * many), so the server never writes a document it could not read back. Throws a GraphError when
 * even that is not enough (the graph alone is too large).
 */
export function fitState(state: ResearchState): ResearchState {
  checkWritable(state.graph);
  if (Buffer.byteLength(renderState(state)) <= STATE_DOC_MAX_BYTES) return state;
  const cut = (line: string) => (line.length > LEDGER_LINE_MAX_CHARS ? `${line.slice(0, LEDGER_LINE_MAX_CHARS)}…` : line);
  const fitted: ResearchState = {
    ...state,
    results: state.results.map(cut),
    evidence: state.evidence.map(cut),
    history: state.history.map(cut),
    verifier: state.verifier.map(cut),
  };
  for (const ledger of ['evidence', 'history', 'results'] as const) {
    let dropped = 0;
    while (fitted[ledger].length > 1 && Buffer.byteLength(renderState(fitted)) > STATE_DOC_MAX_BYTES) {
      const drop = Math.max(1, Math.ceil(fitted[ledger].length / 4));
      fitted[ledger] = fitted[ledger].slice(drop);
      dropped += drop;
      fitted[ledger] = [
        `- (${dropped} earlier lines left out to keep the document under ${STATE_DOC_MAX_BYTES / 1024 / 1024} MB)`,
        ...fitted[ledger].filter((line) => !/^- \(\d+ earlier lines left out/.test(line)),
      ];
    }
    if (Buffer.byteLength(renderState(fitted)) <= STATE_DOC_MAX_BYTES) return fitted;
  }
  throw new GraphError(`the document would pass ${STATE_DOC_MAX_BYTES} bytes even with its ledgers cut`, []);
}

/**
 * Throws a GraphError when the graph, as the server writes it, would pass the bounds its reader
 * holds documents to: a graph read within them (whose defaults the server writes out) or grown by
 * the strategy (follow-up tasks) is refused here rather than written and then refused.
 */
export function checkWritable(graph: TaskGraph): void {
  const nodes = renderedNodes(graph);
  if (nodes > GRAPH_MAX_NODES) throw new GraphError(`the task graph would be written with ${nodes} YAML nodes; it may have at most ${GRAPH_MAX_NODES}`, []);
}

/**
 * Reads the document back: its sections, and its task graph parsed (YAML) and checked. A document
 * that cannot be used throws a GraphError naming the line and the reason.
 */
export function parseState(source: string): ResearchState {
  const size = Buffer.byteLength(source);
  if (size > STATE_DOC_MAX_BYTES) throw new GraphError(`the document has ${size} bytes; it may have at most ${STATE_DOC_MAX_BYTES}`, [], 1);
  // A document saved by an editor with Windows line endings reads the same.
  const text = source.replace(/\r\n?/g, '\n');
  const section = (name: string): string => {
    const start = text.indexOf(`\n## ${name}\n`);
    if (start < 0) throw new GraphError(`the section "## ${name}" is missing`, [], lineAt(text, text.length));
    const from = start + name.length + 5;
    const next = text.indexOf('\n## ', from);
    return text.slice(from, next < 0 ? undefined : next).trim();
  };
  const spec = section('Problem spec');
  const [goalPart, constraintPart] = spec.split(/\n\s*Constraints:\s*\n/);
  // The graph block is the one at the start of a line in the Task graph section, never one quoted elsewhere.
  const graphSection = text.indexOf('\n## Task graph\n');
  const fenceLine = graphSection < 0 ? -1 : text.indexOf(`\n\`\`\`${GRAPH_FENCE}\n`, graphSection);
  const nextSection = graphSection < 0 ? -1 : text.indexOf('\n## ', graphSection + 1);
  const fenceStart = fenceLine < 0 || (nextSection >= 0 && fenceLine > nextSection) ? -1 : fenceLine + 1;
  if (fenceStart < 0) throw new GraphError(`the task graph block (\`\`\`${GRAPH_FENCE}) is missing`, [], lineAt(text, text.indexOf('## Task graph')));
  const yamlStart = fenceStart + GRAPH_FENCE.length + 4;
  const yamlEnd = text.indexOf('\n```', yamlStart - 1);
  if (yamlEnd < 0) throw new GraphError('the task graph block is not closed with ```', [], lineAt(text, fenceStart));
  const graph = parseGraphYaml(text.slice(yamlStart, yamlEnd + 1), lineAt(text, yamlStart) - 1);
  const items = (name: string) =>
    section(name)
      .split('\n')
      .filter((line) => line.trim() && !/^\((none yet|empty)\)$/.test(line.trim()))
      .map(restore);
  const best = section('Current best answer');
  return {
    goal: restore((goalPart ?? '').trim()),
    constraints: (constraintPart ?? '')
      .split('\n')
      .map((line) => restore(line.replace(/^\s*-\s*/, '').trim()))
      .filter(Boolean),
    bestAnswer: /^\(none yet\)$/.test(best) ? '' : restore(best),
    graph,
    results: items('Results ledger'),
    evidence: items('Evidence ledger'),
    verifier: items('Verifier status'),
    history: items('History log'),
  };
}

/** The graph from its YAML, checked; errors name the document's line (`offset`: lines before the YAML). */
export function parseGraphYaml(source: string, offset = 0): TaskGraph {
  const lineCounter = new LineCounter();
  const bounded = parseBounded(source, lineCounter);
  if (!bounded.ok) throw new GraphError(bounded.error.reason, [], lineCounter.linePos(bounded.error.offset).line + offset);
  const { document } = bounded;
  if (document.errors.length > 0) {
    const error = document.errors[0]!;
    throw new GraphError(`the YAML does not parse (${error.code})`, [], lineCounter.linePos(error.pos[0]).line + offset);
  }
  const lineOf = (path: (string | number)[]): number | undefined => {
    let node: unknown = document.contents;
    let line: number | undefined;
    for (const key of path) {
      const next = (node as { get?: (key: unknown, keepScalar: boolean) => unknown } | undefined)?.get?.(key, true);
      if (next === undefined) break;
      node = next;
      const range = (node as { range?: [number, number, number] }).range;
      if (range) line = lineCounter.linePos(range[0]).line + offset;
    }
    return line;
  };
  if (!isMap(document.contents)) throw new GraphError('the task graph must be a mapping with "stages"', [], offset + 1);
  let data: unknown;
  try {
    // No aliases at all: one anchored list named many times would expand to gigabytes.
    data = document.toJS({ maxAliasCount: 0 });
  } catch {
    throw new GraphError('the task graph may not use YAML aliases (*name); write each value out', [], offset + 1);
  }
  const parsed = TaskGraph.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part));
    throw new GraphError(issue.message, path, lineOf(path));
  }
  try {
    checkGraph(parsed.data);
    // Accepted only if the server can write it back: what it reads, it can save.
    checkWritable(parsed.data);
  } catch (error) {
    if (error instanceof GraphError) throw new GraphError(error.reason, error.path, lineOf(error.path));
    throw error;
  }
  return parsed.data;
}

function lineAt(text: string, index: number): number {
  return text.slice(0, Math.max(0, index)).split('\n').length;
}
