// The model request's body as bytes, each message encoded once and copied into the calls after.
import { BodyBuffers, encodeRequest, requestObject } from '@stepwise/backend';
import type { LlmMessage } from '@stepwise/backend';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

describe("a long chat's request bodies", () => {
  /** A chat whose history is about `kib` KiB: a system prompt and question/answer pairs. */
  const chat = (name: string, kib: number): LlmMessage[] => [
    { role: 'system', content: `${name} system.` },
    ...Array.from(
      { length: kib },
      (_, n): LlmMessage =>
        n % 2 ? { role: 'assistant', content: `${name} ${n} ${'a'.repeat(1_000)}` } : { role: 'user', content: `${name} ${n} ${'q'.repeat(1_000)}` },
    ),
  ];
  const expected = (messages: LlmMessage[]) => JSON.parse(JSON.stringify(requestObject(parts(messages))));

  it('are written into the same buffers call after call, each call sending its own list', () => {
    const bodies = new BodyBuffers();
    let messages = chat('one', 100);
    const buffers: ArrayBufferLike[] = [];
    for (let call = 0; call < 6; call++) {
      messages = [...messages, { role: 'user', content: `call ${call}` }];
      const body = encodeRequest(parts(messages), bodies);
      expect(JSON.parse(body.toString('utf8'))).toEqual(expected(messages));
      buffers.push(body.buffer);
      bodies.release(body);
    }
    // Two buffers in turn: a body is never written into the one its messages are copied from.
    expect(new Set(buffers).size).toBe(2);
    expect(buffers[2]).toBe(buffers[0]);
    expect(buffers[3]).toBe(buffers[1]);
  });

  it('a body goes into the smallest free buffer it fits in', () => {
    const bodies = new BodyBuffers();
    const large = encodeRequest(parts(chat('large', 300)), bodies);
    const small = encodeRequest(parts(chat('small', 100)), bodies);
    bodies.release(large);
    bodies.release(small);
    expect(encodeRequest(parts(chat('third', 90)), bodies).buffer).toBe(small.buffer);
    expect(encodeRequest(parts(chat('fourth', 90)), bodies).buffer).toBe(large.buffer);
  });

  it('a body not given back (its reply failed or was cut) is never written over', () => {
    const bodies = new BodyBuffers();
    const messages = chat('one', 100);
    const kept = encodeRequest(parts(messages), bodies);
    const copy = Buffer.from(kept);
    for (let call = 0; call < 4; call++) bodies.release(encodeRequest(parts([...messages, { role: 'user', content: `call ${call}` }]), bodies));
    bodies.release(encodeRequest(parts(chat('two', 120)), bodies));
    expect(kept.equals(copy)).toBe(true);
  });

  it("a chat's list kept in a buffer that another chat's body has taken since is not copied from", () => {
    const bodies = new BodyBuffers({ maxFree: 1 });
    const one = chat('one', 100);
    const first = encodeRequest(parts(one), bodies);
    bodies.release(first);
    // The other chat takes the one free buffer and writes its own body over the first chat's.
    const other = encodeRequest(parts(chat('two', 100)), bodies);
    expect(other.buffer).toBe(first.buffer);
    const next = [...one, { role: 'user', content: 'And now?' } as LlmMessage];
    expect(JSON.parse(encodeRequest(parts(next), bodies).toString('utf8'))).toEqual(expected(next));
  });

  it('a body never given back is not held by the buffers: the collector has it once nothing else does', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const bodies = new BodyBuffers();
    // Made in a function of its own, so that no variable here holds the chat or its body.
    const lend = () => new WeakRef(encodeRequest(parts(chat('gone', 100)), bodies).buffer);
    const buffer = lend();
    for (let attempt = 0; attempt < 20 && buffer.deref(); attempt++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(buffer.deref()).toBeUndefined();
  });

  it('small bodies are made as any buffer, and what was not lent is let be when given back', () => {
    const bodies = new BodyBuffers();
    const small = encodeRequest(parts(history()), bodies);
    bodies.release(small);
    bodies.release(undefined);
    bodies.release(Buffer.alloc(10));
    expect(JSON.parse(encodeRequest(parts(history()), bodies).toString('utf8'))).toEqual(expected(history()));
  });

  it('any sequence of calls of several chats, some bodies given back and some not, sends each list as it is', () => {
    let seed = 11;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % below;
    };
    // Every body goes through the buffers: the checks run on every call.
    const bodies = new BodyBuffers({ minBytes: 0, maxFree: 2 });
    const chats: LlmMessage[][] = [chat('a', 3), chat('b', 3), chat('c', 3)];
    const held: { body: Buffer; copy: Buffer }[] = [];
    for (let call = 0; call < 400; call++) {
      const which = random(chats.length);
      let list = chats[which]!;
      const move = random(6);
      if (move < 4) list = [...list, { role: 'user', content: `call ${call} ${'x'.repeat(random(3_000))}` }];
      else if (move === 4) list = list.slice(0, 1 + random(list.length));
      else list = list.map((item) => ({ ...item }) as LlmMessage);
      chats[which] = list;
      const body = encodeRequest(parts(list), bodies);
      expect(JSON.parse(body.toString('utf8'))).toEqual(expected(list));
      if (random(4) === 0) held.push({ body, copy: Buffer.from(body) });
      else bodies.release(body);
    }
    for (const { body, copy } of held) expect(body.equals(copy)).toBe(true);
  });
});
