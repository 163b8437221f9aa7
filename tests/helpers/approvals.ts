import { observeText, reasonText, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import type { TestClient } from './ws-client.ts';

/** A model's replies for a run that calls write_file (hello into out.txt, call id w1), then ends with `answer`. */
export function writesHello(observation: string, answer: string): ScriptedReply[] {
  return [
    { text: reasonText('Write it.') },
    { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'out.txt', content: 'hello' } }] },
    { text: observeText(observation, { final_answer: answer }) },
  ];
}

/** Asks over the socket for the write `writesHello` scripts; returns the approval request that comes back. */
export function askToWriteHello(client: TestClient): ReturnType<TestClient['waitFor']> {
  client.chat('Write hello to out.txt', { agent_mode: true });
  return client.waitFor('agent_request_input');
}
