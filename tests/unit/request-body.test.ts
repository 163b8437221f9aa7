// The model request's body as bytes, each message encoded once and copied into the calls after.
import { encodeRequest, requestObject } from '@stepwise/backend';
import type { LlmMessage } from '@stepwise/backend';
import { afterEach, describe, expect, it, vi } from 'vitest';

const tools = [{ name: 'calculator', description: 'Evaluates "arithmetic"', parameters: { type: 'object', properties: { expression: { type: 'string' } } } }];

function history(): LlmMessage[] {
  return [
    { role: 'system', content: 'You are careful.\nQuote with "marks" and \\ slashes.' },
    { role: 'user', content: 'Ünïcödé, emoji 🧮, a NUL \u0000 and a line separator \u2028.' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"12*7"}' }] },
    { role: 'tool', toolCallId: 'c1', content: '84' },
    { role: 'assistant', content: 'It is 84.' },
  ];
}

const parts = (messages: LlmMessage[], extra: Partial<Parameters<typeof encodeRequest>[0]> = {}) => ({
  head: { reasoning_effort: 'low', seed: 7, model: 'gpt-4o-mini' },
  messages,
  tools,
  tail: { temperature: 0.2, stream_options: { include_usage: true }, stream: true },
  ...extra,
});

describe('the model request body', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is the JSON the SDK would send: every field, message and tool, escapes and all', () => {
    const sent = parts(history());
    expect(JSON.parse(encodeRequest(sent).toString('utf8'))).toEqual(JSON.parse(JSON.stringify(requestObject(sent))));
    expect(JSON.parse(encodeRequest(sent).toString('utf8'))).toMatchObject({
      model: 'gpt-4o-mini',
      reasoning_effort: 'low',
      messages: [
        { role: 'system' },
        { role: 'user', content: 'Ünïcödé, emoji 🧮, a NUL \u0000 and a line separator \u2028.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"12*7"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '84' },
        { role: 'assistant', content: 'It is 84.' },
      ],
      tools: [{ type: 'function', function: { name: 'calculator' } }],
      stream: true,
    });
  });

  it('is valid JSON without tools, without messages and without tail fields', () => {
    for (const sent of [parts(history(), { tools: undefined }), parts([], { tools: [] }), parts(history(), { head: {}, tail: {} })]) {
      expect(JSON.parse(encodeRequest(sent).toString('utf8'))).toEqual(JSON.parse(JSON.stringify(requestObject(sent))));
    }
  });

  it('encodes a message once: the next call of the run encodes only what is new to it', () => {
    const messages = history();
    encodeRequest(parts(messages));
    const stringify = vi.spyOn(JSON, 'stringify');
    const next = [...messages, { role: 'user', content: 'And now?' } as LlmMessage];
    const body = encodeRequest(parts(next));
    // The head, the tail and the one new message; not the five messages nor the tool sent before.
    expect(stringify).toHaveBeenCalledTimes(3);
    stringify.mockRestore();
    expect(JSON.parse(body.toString('utf8'))).toEqual(JSON.parse(JSON.stringify(requestObject(parts(next)))));
  });

  it('a message changed after it was sent is sent as it is now, never as it was', () => {
    const messages = history();
    encodeRequest(parts(messages));
    const assistant = messages[2] as Extract<LlmMessage, { role: 'assistant' }>;
    assistant.toolCalls![0]!.arguments = '{"expression":"12*8"}';
    const user = messages[1] as Extract<LlmMessage, { role: 'user' }>;
    user.content = 'Changed.';
    const tool = messages[3] as Extract<LlmMessage, { role: 'tool' }>;
    tool.toolCallId = 'c2';
    const sent = JSON.parse(encodeRequest(parts(messages)).toString('utf8'));
    expect(sent.messages[1].content).toBe('Changed.');
    expect(sent.messages[2].tool_calls[0].function.arguments).toBe('{"expression":"12*8"}');
    expect(sent.messages[3].tool_call_id).toBe('c2');
    const ownTools = [{ ...tools[0]! }];
    encodeRequest(parts(messages, { tools: ownTools }));
    ownTools[0]!.description = 'Evaluates arithmetic exactly';
    const again = JSON.parse(encodeRequest(parts(messages, { tools: ownTools })).toString('utf8'));
    expect(again.tools[0].function.description).toBe('Evaluates arithmetic exactly');
  });

  it('any sequence of calls (lists grown, cut, branched, changed, replaced by equal copies) sends each list as it is', () => {
    // A small seeded generator: the same sequence on every run.
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % below;
    };
    const message = (n: number): LlmMessage =>
      [
        { role: 'user', content: `question ${n}` },
        { role: 'assistant', content: null, toolCalls: [{ id: `c${n}`, name: 'calculator', arguments: `{"expression":"${n}*2"}` }] },
        { role: 'tool', toolCallId: `c${n}`, content: String(n * 2) },
        { role: 'assistant', content: `Answer ${n} "quoted"` },
      ][n % 4] as LlmMessage;
    let list: LlmMessage[] = [{ role: 'system', content: 'System.' }];
    const lists: LlmMessage[][] = [];
    for (let call = 0; call < 400; call++) {
      const move = random(10);
      if (move < 5) list = [...list, ...Array.from({ length: 1 + random(3) }, () => message(random(100)))];
      else if (move === 5 && lists.length) list = [...lists[random(lists.length)]!];
      else if (move === 6) list = list.slice(0, 1 + random(list.length));
      else if (move === 7) list = list.map((item) => ({ ...item }) as LlmMessage);
      else if (move === 8 && list.length > 1) {
        const changed = list[1 + random(list.length - 1)]!;
        changed.content = `changed ${call}`;
      } else list = [{ role: 'system', content: `System ${call % 3}.` }, ...list.slice(1)];
      lists.push(list);
      const sent = parts(list, { tools: call % 2 ? tools : undefined });
      expect(JSON.parse(encodeRequest(sent).toString('utf8'))).toEqual(JSON.parse(JSON.stringify(requestObject(sent))));
    }
  });
});
