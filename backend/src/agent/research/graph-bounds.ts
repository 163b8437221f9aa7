import { Composer, CST, type Document, Lexer, type LineCounter, Parser, YAMLParseError } from 'yaml';

/**
 * What the task graph's YAML may make the parser build. The parser's time and memory grow with
 * the nodes it builds and its recursion with their depth, neither of which the document's size
 * bounds (`[[[[…` is one node deeper per byte; `[a,a,a,…` one node per two bytes), so both are
 * counted while the parser runs, token by token, and the parse stops at the first token past a
 * bound. A valid graph nests 8 deep; 500 tasks with a few criteria, inputs and dependencies each
 * need some 17,000 nodes, which take the parser a few hundred milliseconds.
 */
export const GRAPH_MAX_NODES = 20_000;
export const GRAPH_MAX_DEPTH = 32;
/** Lines of the graph's YAML: at least GRAPH_MAX_NODES, so a graph within the node bound is always written within this one (see renderedNodes). */
export const GRAPH_MAX_LINES = 20_000;

/** Tokens that make a node or an entry: scalars, flow collections, sequence items, keys and values, aliases. */
const NODE_TOKENS: ReadonlySet<string> = new Set([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'flow-seq-start',
  'flow-map-start',
  'seq-item-ind',
  'explicit-key-ind',
  'map-value-ind',
  'alias',
]);

/** Why a graph's YAML was not parsed: which bound it passes, and the offset of the token that passed it. */
export interface GraphBoundsError {
  reason: string;
  offset: number;
}

/** What `parseBounded` gives: the document (errors in its own list), or the bound passed. */
export type BoundedParse = { ok: true; document: Document.Parsed } | { ok: false; error: GraphBoundsError };

/**
 * Parses YAML as `parseDocument` does, one lexical token at a time, counting the nodes the parser
 * builds and the depth of its stack: past GRAPH_MAX_NODES or GRAPH_MAX_DEPTH it stops there and
 * says so, having built no more than that. Lines past GRAPH_MAX_LINES are refused before the first
 * token.
 */
export function parseBounded(source: string, lineCounter: LineCounter): BoundedParse {
  const lines = countLines(source);
  if (lines > GRAPH_MAX_LINES) return { ok: false, error: { reason: `the task graph has ${lines} lines; it may have at most ${GRAPH_MAX_LINES}`, offset: 0 } };
  lineCounter.addNewLine(0);
  const parser = new Parser(lineCounter.addNewLine);
  const tokens: CST.Token[] = [];
  let nodes = 0;
  let offset = 0;
  for (const lexeme of new Lexer().lex(source)) {
    const type = CST.tokenType(lexeme);
    if (type !== null && NODE_TOKENS.has(type) && ++nodes > GRAPH_MAX_NODES) {
      return { ok: false, error: { reason: `the task graph has more than ${GRAPH_MAX_NODES} YAML nodes; it may have at most ${GRAPH_MAX_NODES}`, offset } };
    }
    for (const token of parser.next(lexeme)) tokens.push(token);
    // The parser's stack holds the document and each collection open at this token.
    if (parser.stack.length > GRAPH_MAX_DEPTH) {
      return { ok: false, error: { reason: `the task graph nests more than ${GRAPH_MAX_DEPTH} levels deep; it may nest at most ${GRAPH_MAX_DEPTH}`, offset } };
    }
    offset += lexeme.length;
  }
  for (const token of parser.end()) tokens.push(token);
  const composer = new Composer({ prettyErrors: false });
  let document: Document.Parsed | undefined;
  for (const composed of composer.compose(tokens, true, source.length)) {
    if (!document) document = composed;
    else {
      // As parseDocument does: one document, a second is an error.
      document.errors.push(new YAMLParseError([composed.range[0], composed.range[1]], 'MULTIPLE_DOCS', 'Source contains multiple documents'));
      break;
    }
  }
  return { ok: true, document: document! };
}

/**
 * The nodes `parseBounded` counts in the YAML the server writes for `value` (block style, every
 * string on one line): a key, its `:` and its value per entry, a `-` and its value per item, one
 * for an empty collection or a scalar. Each line of that YAML holds at least one of them, so its
 * lines are at most this many too.
 */
export function renderedNodes(value: unknown): number {
  if (Array.isArray(value)) return value.length === 0 ? 1 : value.reduce((sum: number, item) => sum + 1 + renderedNodes(item), 0);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined);
    return entries.length === 0 ? 1 : entries.reduce((sum, [, item]) => sum + 2 + renderedNodes(item), 0);
  }
  return 1;
}

function countLines(source: string): number {
  let lines = 0;
  for (let index = source.indexOf('\n'); index >= 0; index = source.indexOf('\n', index + 1)) lines++;
  return lines;
}
