// 4. A model streaming many tokens as fast as the socket takes them: the relay against the bare SDK stream.
import { startModelServer } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';
import { log, now, type Settings } from './settings.ts';
import { median, round } from './stats.ts';
import type { Stores } from './stores.ts';
import { openClient } from './ws-client.ts';

export async function streaming(settings: Settings, stores: Stores) {
  log(`4. streaming relay: ${settings.tokens} tokens`);
  const model = await startModelServer({ BENCH_MODE: 'stream', BENCH_TOKENS: String(settings.tokens) });
  const server = await startStepwise(model.url, { env: await stores.embedded.env() });
  const OpenAI = (await import('openai')).default;
  const client = new OpenAI({ baseURL: model.url, apiKey: 'bench', maxRetries: 0 });
  const floor: number[] = [];
  const relay: number[] = [];
  let stepwiseFrames = 0;
  let stepwiseTokens = 0;
  for (let round = 0; round < 3; round++) {
    let started = now();
    let chunks = 0;
    for await (const chunk of await client.chat.completions.create({ model: 'bench', messages: [{ role: 'user', content: 'stream' }], stream: true })) {
      if (chunk.choices[0]?.delta?.content) chunks++;
    }
    floor.push(now() - started);
    const socket = await openClient(server.wsUrl);
    let frames = 0;
    let characters = 0;
    socket.socket.on('message', (data) => {
      const text = data.toString();
      if (!text.startsWith('{"type":"assistant_delta"')) return;
      frames++;
      characters += (JSON.parse(text) as { delta: string }).delta.length;
    });
    started = now();
    socket.socket.send(JSON.stringify({ type: 'chat', content: 'stream' }));
    await socket.done;
    relay.push(now() - started);
    stepwiseFrames = frames;
    stepwiseTokens = characters / 4; // the model streams 'tok ' tokens
    socket.socket.close();
    if (chunks !== settings.tokens) log(`   note: the floor saw ${chunks} chunks`);
  }
  await server.stop();
  await model.stop();
  const floorMs = median(floor);
  const relayMs = median(relay);
  return {
    tokens: settings.tokens,
    tokensAtClient: stepwiseTokens,
    framesAtClient: stepwiseFrames,
    floorTokensPerSecond: round(settings.tokens / (floorMs / 1000), 0),
    stepwiseTokensPerSecond: round(stepwiseTokens / (relayMs / 1000), 0),
    addedLatencyPerTokenUs: round(((relayMs - floorMs) / settings.tokens) * 1000, 1),
  };
}
