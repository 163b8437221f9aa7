import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../fixtures/scripted-llm-server.ts';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { chatsBackToBack } from '../helpers/back-to-back.ts';
import { backToBackRig, ROUNDS, socketsInOneSession, twoInstances } from '../helpers/back-to-back-rig.ts';
import { postgresUrl } from '../helpers/databases.ts';
import { PROCESS_TEST_TIMEOUT_MS } from '../helpers/process.ts';

// The cases of response-complete.test.ts on two instances (PostgreSQL and Redis), in a file of
// their own so that both run side by side. The tests share one pair of instances and work in
// sessions of their own; a run waiting for input times out after 200 ms (only the last test asks).

const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!pg || !redisUrl)(
  'response_complete means the session is free, on two instances (PostgreSQL and Redis)',
  { timeout: PROCESS_TEST_TIMEOUT_MS },
  () => {
    const rig = backToBackRig((setup) =>
      twoInstances(setup, { postgres: pg!, redis: redisUrl! }, { AGENT_INPUT_TIMEOUT_MS: '200', INPUT_TIMEOUT_ACTION: 'stop' }),
    );

    it('a chat at A sent the instant A delivers the response_complete of a run stopped from B is accepted, 50 times in a row', async () => {
      rig.hangingActs();
      const [onA, onB] = await socketsInOneSession(rig, rig.servers);
      expect(await rig.stoppedBackToBack(onA, onB)).toEqual({ completed: ROUNDS, errors: [] });
    });

    it('chats sent in turn at A and B, each the instant its instance delivers the last run’s response_complete, are accepted, 50 in a row', async () => {
      rig.answeringRuns();
      const [onA, onB] = await socketsInOneSession(rig, rig.servers);
      expect(await rig.answeredBackToBack(onA, onB)).toEqual({ completed: ROUNDS, errors: [] });
    });

    describe('whatever ended the run', () => {
      const ENDINGS = ['answered', 'stopped', 'failed', 'timed_out'] as const;
      /** The ending a request's run is scripted for: its chat names it ("Job 7 failed"), the latest chat the latest. */
      const endingOf = (request: RecordedRequest) => {
        const jobs = request.body.messages.flatMap((message) => [...(message.content ?? '').matchAll(/Job (\d+) (\w+)/g)]);
        return jobs.sort((x, y) => Number(x[1]) - Number(y[1])).at(-1)?.[2];
      };

      it('chats sent in turn at A and B the instant a run answered, was stopped from the other, failed or timed out waiting for input are accepted, 48 in a row', async () => {
        const llm = rig.llm;
        llm.respond((request) => {
          const ending = endingOf(request);
          if (ending === 'failed') return { status: 400 };
          if (request.phase === 'act') {
            if (ending === 'stopped') return { hang: true };
            if (ending === 'timed_out') return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which one?' } }] };
            return { text: 'No tool needed.' };
          }
          if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: 'Done.' }) };
          return { text: reasonText('On it.') };
        });
        const [onA, onB] = await socketsInOneSession(rig, rig.servers);
        const rounds = 48;
        const result = await chatsBackToBack([onA, onB], rounds, {
          chat: (round) => ({ content: `Job ${round} ${ENDINGS[round % ENDINGS.length]}`, agent_mode: true }),
          each: async (round) => {
            if (ENDINGS[round % ENDINGS.length] !== 'stopped') return;
            await llm.waitFor(
              (request) =>
                request.phase === 'act' &&
                endingOf(request) === 'stopped' &&
                request.body.messages.some((message) => message.content?.includes(`Job ${round} `)),
              30_000,
            );
            // Stopped from the instance that did not send it.
            (round % 2 === 0 ? onB : onA).send({ type: 'agent_control', action: 'stop' });
          },
        });
        expect(result).toEqual({ completed: rounds, errors: [] });
        const endings = onA.events.filter((event) => ['agent_completion', 'agent_stopped', 'agent_error'].includes(String(event.update_type)));
        expect(endings.map((event) => (event.update_type === 'agent_stopped' ? `stopped:${String(event.reason)}` : String(event.update_type)))).toEqual(
          Array.from(
            { length: rounds },
            (_, round) =>
              ({ answered: 'agent_completion', stopped: 'stopped:user', failed: 'agent_error', timed_out: 'stopped:input_timeout' })[
                ENDINGS[round % ENDINGS.length]!
              ],
          ),
        );
      });
    });
  },
);
