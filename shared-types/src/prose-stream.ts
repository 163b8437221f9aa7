import { isJsonObject, nextCandidate } from './streaming-prose.ts';

/** A block being read (its start found, its end not yet): its text so far and where its scan stands. */
type OpenBlock =
  | {
      kind: 'fence';
      chunks: string[];
      /** Whether the fence's first line has ended. */
      pastFirstLine: boolean;
      /** The body's first character that is not whitespace (a `{`: the block is JSON), once there is one. */
      bodyStart: string | undefined;
      /** The line being read, while it may still be a closing fence. */
      line: string | undefined;
    }
  | { kind: 'brace'; chunks: string[]; depth: number; inString: boolean; escaped: boolean };

/** A line that is a closing fence, and the start of one that may yet become one. */
const CLOSING_LINE = /^[ \t]*```[ \t]*$/;
const CLOSING_SO_FAR = /^[ \t]*(?:`{0,3}|```[ \t]*)$/;
/** A `{` that opens a JSON object (a quote follows), wherever it stands. */
const OBJECT_BRACE = /\{\s*"/y;
/** How far from the end of the text a control block may yet begin that nothing of now shows (a ```json in the making). */
const MARGIN = 6;

/**
 * streamingProse for a text that arrives in pieces, each piece read once: the prose to send as
 * each delta arrives, exactly what sending the growth of `streamingProse(text so far)` sends (the
 * control block, and whatever may still become one, held back; nothing sent while tidying has moved
 * whitespace), in time linear in the text. Prose is read through a window of the last few
 * characters; a block (a fence or a brace) is scanned a character at a time until it ends.
 */
export class ProseStream {
  /** The text not yet decided, with the few characters before it that say whether a line starts there. */
  private window = '';
  /** Where the window starts in the whole text. */
  private base = 0;
  /** Everything before this (a position in the whole text) is decided: its prose went to `tidied`. */
  private settled = 0;
  /** Whether `settled` is where a block ended (the search goes on from there as it is) rather than a point in prose. */
  private afterBlock = true;
  private open: OpenBlock | undefined;
  private readonly tidied = new TidyStream();
  /** Tidied prose decided since the last send, and the undecided tail that send ended with. */
  private fresh = '';
  private sentTail = '';
  /** What was sent is no longer the start of the prose, and never will be again: nothing more is sent. */
  private stuck = false;

  /** Takes the next delta; returns the prose to send now (empty when nothing is). */
  push(delta: string): string {
    const tentative = this.read(delta);
    if (this.stuck) return '';
    const tail = this.tidied.tail(tentative);
    const grown = this.fresh + tail;
    if (grown.length > this.sentTail.length && grown.startsWith(this.sentTail)) {
      const send = grown.slice(this.sentTail.length);
      this.sentTail = tail;
      this.fresh = '';
      return send;
    }
    // Decided prose that differs from what was sent never changes back.
    let same = 0;
    while (same < this.sentTail.length && same < grown.length && grown[same] === this.sentTail[same]) same++;
    if (same < this.sentTail.length && same < this.fresh.length) this.stuck = true;
    return '';
  }

  /** Reads a delta; returns the undecided prose at the end (untidied). */
  private read(delta: string): string {
    let text = delta;
    for (;;) {
      if (this.open) {
        const block = this.open;
        const { taken, end } = this.scanBlock(block, text);
        if (end === 'open') return '';
        const blockText = block.chunks.join('');
        const shown = (block.kind === 'fence' ? block.bodyStart === '{' : isJsonObject(blockText)) ? '' : blockText;
        // A closing fence at the very end may yet turn out to be something else: the block stays open.
        if (end === 'at_end') return shown;
        this.open = undefined;
        this.settleAfterBlock(shown, blockText);
        text = text.slice(taken);
        continue;
      }
      this.window += text;
      text = '';
      const found = this.readProse();
      if (found === undefined) return this.window.slice(this.settled - this.base);
      if (found === 'held') return '';
      // A block starts: the window from its start on is its first text.
      text = this.window.slice(found - this.base);
      this.window = this.window.slice(0, found - this.base);
    }
  }

  /**
   * Reads the window as prose: undefined when no block starts in it (all but its last characters
   * decided), `held` when one may start at its very end, or where a block starts (opened).
   */
  private readProse(): number | 'held' | undefined {
    const local = this.settled - this.base;
    const candidate = nextCandidate(this.window, local, this.searchStart(local));
    if (!candidate) {
      const decided = Math.max(local, this.window.length - MARGIN);
      this.commit(this.window.slice(local, decided), this.base + decided, false);
      return undefined;
    }
    this.commit(this.window.slice(local, candidate.start), this.base + candidate.start, false);
    // A start that the next characters may undo (backticks or a brace at the very end) is read again with them.
    if (!this.lasting(candidate.kind, candidate.start)) return 'held';
    this.open =
      candidate.kind === 'fence'
        ? { kind: 'fence', chunks: [], pastFirstLine: false, bodyStart: undefined, line: undefined }
        : { kind: 'brace', chunks: [], depth: 0, inString: false, escaped: false };
    return this.base + candidate.start;
  }

  /** Scans a block's next text: how much of it the block took, and whether the block ended (after a line break, or at the very end). */
  private scanBlock(block: OpenBlock, text: string): { taken: number; end: 'open' | 'ended' | 'at_end' } {
    for (let at = 0; at < text.length; at++) {
      const char = text[at]!;
      if (block.kind === 'brace') {
        if (block.escaped) block.escaped = false;
        else if (block.inString) {
          if (char === '\\') block.escaped = true;
          else if (char === '"') block.inString = false;
        } else if (char === '"') block.inString = true;
        else if (char === '{') block.depth++;
        else if (char === '}' && --block.depth === 0) {
          block.chunks.push(text.slice(0, at + 1));
          return { taken: at + 1, end: 'ended' };
        }
        continue;
      }
      if (char === '\n') {
        if (block.pastFirstLine && block.line !== undefined && CLOSING_LINE.test(block.line)) {
          block.chunks.push(text.slice(0, at));
          return { taken: at, end: 'ended' };
        }
        block.pastFirstLine = true;
        block.line = '';
        continue;
      }
      if (block.pastFirstLine && block.bodyStart === undefined && !/\s/.test(char)) block.bodyStart = char;
      if (block.line !== undefined) {
        block.line += char;
        if (!CLOSING_SO_FAR.test(block.line)) block.line = undefined;
      }
    }
    block.chunks.push(text);
    const closed = block.kind === 'fence' && block.pastFirstLine && block.line !== undefined && CLOSING_LINE.test(block.line);
    return { taken: text.length, end: closed ? 'at_end' : 'open' };
  }

  /** A block ended: its text (shown when it is not JSON) is decided, and prose reading goes on after it. */
  private settleAfterBlock(shown: string, blockText: string): void {
    const end = this.settled + blockText.length;
    // The window keeps the block's last character: whether a line starts after it.
    this.window = blockText.slice(-1);
    this.base = end - this.window.length;
    this.commit(shown, end, true);
  }

  private commit(prose: string, settled: number, afterBlock: boolean): void {
    if (prose) this.fresh += this.tidied.feed(prose);
    if (settled !== this.settled) this.afterBlock = afterBlock;
    this.settled = settled;
    // The window keeps, before what is undecided, the spaces and the line break (or one character) that say whether a line starts there.
    let keep = settled - this.base;
    while (keep > 0 && (this.window[keep - 1] === ' ' || this.window[keep - 1] === '\t')) keep--;
    keep = Math.max(0, keep - 1);
    if (keep > 0) {
      this.window = this.window.slice(keep);
      this.base += keep;
    }
  }

  /** Where the search for the next block goes on: back to the line break before `local` when that may be a line start. */
  private searchStart(local: number): number {
    if (this.afterBlock) return local;
    let start = local;
    while (start > 0 && (this.window[start - 1] === ' ' || this.window[start - 1] === '\t')) start--;
    return start > 0 && this.window[start - 1] === '\n' ? start - 1 : local;
  }

  /** Whether a block's start stays one whatever follows: three backticks, a brace at a line start or before a quote. */
  private lasting(kind: 'fence' | 'brace', start: number): boolean {
    if (kind === 'fence') return this.window.startsWith('```', start);
    OBJECT_BRACE.lastIndex = start;
    if (OBJECT_BRACE.test(this.window)) return true;
    let before = start;
    while (before > 0 && (this.window[before - 1] === ' ' || this.window[before - 1] === '\t')) before--;
    return before === 0 ? this.base === 0 : this.window[before - 1] === '\n';
  }
}

/**
 * streamingProse's tidy for prose that arrives in pieces: what is decided goes out as it comes;
 * the whitespace at the end is held, since what follows it decides what becomes of it.
 */
class TidyStream {
  private held = '';
  private started = false;

  /** Takes decided prose; returns its tidied part that is decided too. */
  feed(prose: string): string {
    let out = '';
    for (const [part] of prose.matchAll(/\s+|\S+/g)) {
      if (/^\s/.test(part)) {
        this.held += part;
        continue;
      }
      if (this.started) out += collapse(this.held);
      this.held = '';
      this.started = true;
      out += part;
    }
    return out;
  }

  /** The tidied rest: the held whitespace and the undecided prose after it, trimmed at the end. */
  tail(undecided: string): string {
    const rest = collapse(this.held + undecided).trimEnd();
    return this.started ? rest : rest.trimStart();
  }
}

function collapse(text: string): string {
  return text.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n');
}
