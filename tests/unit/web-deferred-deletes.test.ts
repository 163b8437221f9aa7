import { describe, expect, it } from 'vitest';
import { DeferredDeletes } from '../../frontend/src/lib/deferred-deletes.ts';

/** A clock and timers the test moves by hand. */
function manualTime() {
  let now = 0;
  const timers = new Map<number, { at: number; run: () => void }>();
  let next = 1;
  return {
    now: () => now,
    setTimer: (run: () => void, ms: number) => {
      timers.set(next, { at: now + ms, run });
      return next++;
    },
    clearTimer: (timer: unknown) => void timers.delete(timer as number),
    advance(ms: number) {
      now += ms;
      for (const [id, timer] of [...timers]) {
        if (timer.at <= now) {
          timers.delete(id);
          timer.run();
        }
      }
    },
    pendingTimers: () => timers.size,
  };
}

function setup() {
  const time = manualTime();
  const requests: { id: string; keepalive: boolean }[] = [];
  const deleted: string[] = [];
  const deletes = new DeferredDeletes({
    delayMs: 5_000,
    remove: async (id, { keepalive }) => void requests.push({ id, keepalive }),
    onDeleted: (id) => deleted.push(id),
    ...time,
  });
  return { time, requests, deleted, deletes };
}

describe('deleting a chat with a few seconds to undo', () => {
  it('sends the delete only once the undo time has run out', async () => {
    const { time, requests, deleted, deletes } = setup();
    deletes.schedule('chat-1', 'Six times seven');
    expect(deletes.list()).toEqual([{ id: 'chat-1', title: 'Six times seven', deadline: 5_000 }]);
    time.advance(4_999);
    expect(requests).toEqual([]);
    time.advance(1);
    await Promise.resolve();
    expect(requests).toEqual([{ id: 'chat-1', keepalive: false }]);
    expect(deleted).toEqual(['chat-1']);
    expect(deletes.list()).toEqual([]);
  });

  it('undo brings the chat back and no delete is ever sent', () => {
    const { time, requests, deletes } = setup();
    deletes.schedule('chat-1', 'Six times seven');
    time.advance(3_000);
    expect(deletes.undo('chat-1')).toBe(true);
    expect(deletes.list()).toEqual([]);
    expect(time.pendingTimers()).toBe(0);
    time.advance(60_000);
    expect(requests).toEqual([]);
    expect(deletes.undo('chat-1')).toBe(false);
  });

  it('sends what still waits at once, outliving the page, when the page is left', () => {
    const { time, requests, deletes } = setup();
    deletes.schedule('chat-1', 'One');
    deletes.schedule('chat-2', 'Two');
    deletes.flush();
    expect(requests).toEqual([
      { id: 'chat-1', keepalive: true },
      { id: 'chat-2', keepalive: true },
    ]);
    time.advance(10_000);
    expect(requests).toHaveLength(2);
  });

  it('tells the page when a delete failed', async () => {
    const time = manualTime();
    const errors: string[] = [];
    const deletes = new DeferredDeletes({
      delayMs: 10,
      remove: () => Promise.reject(new Error('Could not delete the session (500)')),
      onError: (id, error) => errors.push(`${id}: ${error.message}`),
      ...time,
    });
    deletes.schedule('chat-1', 'One');
    time.advance(10);
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual(['chat-1: Could not delete the session (500)']);
  });
});
