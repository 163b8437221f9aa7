import type { LoggedEvent } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { notificationFor } from '../../backend/src/notify/notifications.ts';

const chat = { id: 's1', title: 'Budget' };
const logged = (fields: Record<string, unknown>) => ({ type: 'agent_update', seq: 7, ts: '2026-11-28T08:00:00.000Z', run_id: 'r1', ...fields }) as LoggedEvent;

describe('what an event notifies', () => {
  it('a question is input_required, with its choices, deadline and a link to the chat at the question', () => {
    const event = logged({
      update_type: 'agent_request_input',
      question: 'Which year?',
      step: 2,
      question_id: 'q1',
      choices: ['2025', '2026'],
      deadline: '2026-11-28T09:00:00.000Z',
    });
    expect(notificationFor(event, chat, 'https://chat.example.com')).toEqual({
      type: 'input_required',
      timestamp: '2026-11-28T08:00:00.000Z',
      data: {
        chat,
        run_id: 'r1',
        link: 'https://chat.example.com/answer/q1?session=s1',
        question: { id: 'q1', text: 'Which year?', kind: 'question', choices: ['2025', '2026'], deadline: '2026-11-28T09:00:00.000Z' },
      },
    });
  });

  it('a failed run is run_failed with its message; a step or an answer notifies nothing', () => {
    expect(
      notificationFor(logged({ update_type: 'agent_error', message: 'The model endpoint kept failing', step: 3 }), chat, 'http://127.0.0.1:8787'),
    ).toMatchObject({
      type: 'run_failed',
      data: { message: 'The model endpoint kept failing', link: 'http://127.0.0.1:8787/?session=s1' },
    });
    expect(notificationFor(logged({ update_type: 'agent_turn_start', step: 1 }), chat, 'http://x')).toBeUndefined();
    expect(notificationFor(logged({ update_type: 'agent_input_received', question_id: 'q1', by: { id: 'u', name: 'U' } }), chat, 'http://x')).toBeUndefined();
    expect(notificationFor({ type: 'assistant_message', content: 'Hi', seq: 1, ts: 'x' } as LoggedEvent, chat, 'http://x')).toBeUndefined();
  });
});
