import { ProseStream, streamingProse } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';

/** What the stream sent before it was incremental: the growth of streamingProse(text so far), when it grew as sent. */
function resent(deltas: string[]): string[] {
  let raw = '';
  let sent = '';
  return deltas.map((delta) => {
    raw += delta;
    const prose = streamingProse(raw);
    if (prose.length <= sent.length || !prose.startsWith(sent)) return '';
    const out = prose.slice(sent.length);
    sent = prose;
    return out;
  });
}

const streamed = (deltas: string[]) => {
  const stream = new ProseStream();
  return deltas.map((delta) => stream.push(delta));
};

/** The text cut into pieces of 1 to `most` characters, the same pieces for the same seed. */
function pieces(text: string, seed: number, most: number): string[] {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state >>> 16;
  };
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    const size = 1 + (next() % most);
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

const fenced = (prose: string, control: object) => `${prose}\n\n\`\`\`json\n${JSON.stringify(control)}\n\`\`\``;

const TEXTS = [
  fenced('Evaluate 6*7*2 with the calculator.', { plan: 'Evaluate 6*7*2', tools_to_consider: ['calculator'], finish: false }),
  `The calculator returned 84.\n${JSON.stringify({ observation: 'It is {84}', should_continue: false, final_answer: 'a "quoted" \\ 84' })}`,
  'Done here. {"finish": true}',
  'Done here. {"finish": true',
  'First.\n```json\n{"plan": "x"}\n```\nThen more.\n\n\n\nAnd   \n  more.  ',
  'Run this:\n```\nprint(6*7)\n```\nand read the output.',
  'Run this:\n  ```python\n  print({"a": 1})\n  ```  \nthen ```json {"inline": true}``` and on.',
  'The set {a, b} has two members; {"key" is not closed',
  'Use `x` and ``y`` here.\n``\nnot a fence\n`single`\n```',
  '  \n\t Leading space, then {\n  "plan": "nested {braces} and \\"escapes\\"",\n  "n": {"deep": [1, 2]}\n}\nafter it. ',
  'Windows lines\r\n\r\n\r\nhere \r\n{"x": 1}\r\nend',
  'Ünïcödé 🙂 prose with 🙂 {"emoji": "🙂"} and ```json\n{"a": "🙂"}\n``` done 🙂',
  '```json\n{"plan": "answer", "finish": true}\n```',
  'Code:\n```\nnever closed {"json": true}\n',
  'Text ``` inside a line, ```` four, and a fence\n````\nquad\n````\nend',
  'trailing fence at the end\n```',
  'Two blocks\n```json\n{"a": 1}\n```\nmiddle\n{"b": 2}\nlast {not json} here',
];

describe('ProseStream: streamingProse’s prose, each delta read once', () => {
  it('sends what resending streamingProse’s growth sends, for every way of cutting the text', () => {
    for (const text of TEXTS) {
      const cuts = [[...text], ...Array.from({ length: 12 }, (_, seed) => pieces(text, seed + 1, 2 + (seed % 9)))];
      for (const deltas of cuts) expect({ text, deltas, sent: streamed(deltas) }).toEqual({ text, deltas, sent: resent(deltas) });
    }
  });

  it('streams a long reply in time linear in its length (a quadratic scan would outlast the test’s timeout)', () => {
    const paragraph = 'Prose with a {set} and `code`, going on and on. ';
    const code = 'let total = {"a": 1};\n'.repeat(1_000);
    const text = `${paragraph.repeat(3_000)}\n\n\`\`\`js\n${code}\`\`\`\n${paragraph.repeat(1_000)}${fenced('', { plan: 'done', finish: true })}`;
    const sent = streamed(pieces(text, 7, 4)).join('');
    expect(sent).toBe(streamingProse(text));
    expect(sent).not.toContain('"plan"');
  });
});
