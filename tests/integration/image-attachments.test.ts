import { describe, expect, it } from 'vitest';
import { pngHeaderOnly, pngSize, solidPng } from '../fixtures/image-maker.ts';
import { observeText, type RecordedRequest, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient, answeredInOneStep } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer;
let client: TestClient;
const open = closeAfterEach();

async function start(env: Record<string, string>, demo = false) {
  if (demo) server = open(await startStepwise({ LLM_PROVIDER: 'demo', ...env }));
  else {
    llm = open(await ScriptedLlmServer.start());
    server = open(await startStepwiseWithModel(llm.url, env));
  }
  client = open(await TestClient.connect(server.wsUrl));
}

function upload(name: string, body: Uint8Array) {
  return fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    body: new Uint8Array(body),
  });
}

type Part = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** The parts of the request's question turn (the last user message with parts). */
function questionParts(request: RecordedRequest): Part[] {
  const turn = request.body.messages.find((message) => message.role === 'user' && Array.isArray(message.content));
  return (turn?.content ?? []) as unknown as Part[];
}

function imageBytes(part: Part | undefined): { mediaType: string; bytes: Buffer } {
  const url = part?.type === 'image_url' ? part.image_url.url : '';
  const match = /^data:(image\/[a-z]+);base64,(.+)$/.exec(url);
  if (!match) throw new Error(`not a data URL: ${url.slice(0, 60)}`);
  return { mediaType: match[1]!, bytes: Buffer.from(match[2]!, 'base64') };
}

describe('images attached to a message', () => {
  it('reach a vision model as image parts (base64 data URLs) with the question, and the answer follows', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini' });
    const square = solidPng(8, 8);
    expect((await upload('square.png', square)).status).toBe(201);
    llm!.enqueue(
      { text: reasonText('I see a red square.') },
      { text: 'No tool is needed.' },
      { text: observeText('Red.', { final_answer: 'It is a red square.' }) },
    );
    client.chat('What is in this picture?', { agent_mode: true, attachments: ['square.png'] });
    const events = (await client.untilComplete()).filter((event) => 'seq' in event && event.type !== 'file_saved');
    expect(summarize(events)).toEqual(answeredInOneStep());
    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('It is a red square.');
    for (const request of llm!.requests) {
      const parts = questionParts(request);
      expect(parts.map((part) => part.type)).toEqual(['text', 'image_url']);
      expect(parts[0]).toEqual({ type: 'text', text: 'What is in this picture?' });
      const image = imageBytes(parts[1]);
      expect(image.mediaType).toBe('image/png');
      expect(image.bytes.equals(square)).toBe(true);
    }
  });

  it('scales an image with a side over IMAGE_MAX_SIDE down on the server, keeping its proportions', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini', IMAGE_MAX_SIDE: '64' });
    expect((await upload('wide.png', solidPng(400, 100, [0, 0, 255]))).status).toBe(201);
    llm!.enqueue({ text: reasonText('Blue.') }, { text: 'No tool is needed.' }, { text: observeText('Blue.', { final_answer: 'A blue band.' }) });
    client.chat('Describe wide.png', { agent_mode: true, attachments: ['wide.png'] });
    await client.untilComplete();
    const image = imageBytes(questionParts(llm!.requests[0]!)[1]);
    expect(image.mediaType).toBe('image/png');
    expect(pngSize(image.bytes)).toEqual({ width: 64, height: 16 });
  });

  it('says plainly that a model which cannot see gets no images, naming the setting, before any call', async () => {
    await start({ LLM_MODEL: 'llama3.1' });
    expect((await upload('square.png', solidPng(4, 4))).status).toBe(201);
    client.chat('What is in this picture?', { agent_mode: true, attachments: ['square.png'] });
    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_error');
    expect(String(failure?.message)).toContain('cannot see them');
    expect(String(failure?.message)).toContain('LLM_VISION=true');
    expect(String(failure?.message)).toContain('llama3.1');
    expect(llm!.requests).toEqual([]);
  });

  it('answers a plain chat message with images for a model that cannot see with a vision_unsupported error', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini', LLM_VISION: 'false' });
    expect((await upload('square.png', solidPng(4, 4))).status).toBe(201);
    client.chat('What is in this picture?', { attachments: ['square.png'] });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'error')).toMatchObject({ code: 'vision_unsupported' });
    expect(llm!.requests).toEqual([]);
  });

  it('ends the run saying so when an attached image is gone', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini' });
    client.chat('What is in this picture?', { agent_mode: true, attachments: ['gone.png'] });
    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_error');
    expect(String(failure?.message)).toContain('No file "gone.png"');
    expect(llm!.requests).toEqual([]);
  });

  it('says the offline demo model cannot see images', async () => {
    await start({}, true);
    expect((await upload('square.png', solidPng(4, 4))).status).toBe(201);
    client.chat('What is in this picture?', { agent_mode: true, attachments: ['square.png'] });
    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_error');
    expect(String(failure?.message)).toContain('demo model cannot see them');
  });

  it('refuses more images than IMAGE_MAX_PER_MESSAGE before a run starts', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini', IMAGE_MAX_PER_MESSAGE: '2' });
    client.chat('Compare these', { agent_mode: true, attachments: ['a.png', 'b.png', 'c.png'] });
    const refusal = await client.next((event) => event.type === 'error');
    expect(refusal).toMatchObject({ code: 'too_many_images' });
    expect(llm!.requests).toEqual([]);
  });

  it('refuses at upload an image that is not what its name says, or holds more than IMAGE_MAX_PIXELS', async () => {
    await start({ LLM_MODEL: 'gpt-4o-mini', IMAGE_MAX_PIXELS: '1000000' });
    for (const [name, body] of [
      ['photo.png', Buffer.from('not a picture')],
      ['photo.jpg', solidPng(4, 4)],
      ['huge.png', pngHeaderOnly(20_000, 20_000)],
    ] as const) {
      const response = await upload(name, body);
      expect(response.status, name).toBe(400);
      expect((await response.json()).error.code, name).toBe('invalid_image');
    }
  });
});
