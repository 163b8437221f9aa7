import type { TestClient } from './ws-client.ts';

type Event = Record<string, unknown>;

/**
 * Sends `rounds` chats back to back, round r on `clients[r % clients.length]` (all in one
 * session): the first now, each next one in the very message handler in which its client
 * receives the previous run's `response_complete`, as a client that waits for it before sending
 * does, with no delay at all. `each(round)` may steer the run of each round (stop it from
 * elsewhere, say). Resolves with the errors the senders got, once the last run's
 * `response_complete` arrived, or as soon as an error came (nothing would follow it).
 */
export async function chatsBackToBack(
  clients: TestClient[],
  rounds: number,
  options: { chat: (round: number) => Record<string, unknown>; each?: (round: number) => Promise<void> },
): Promise<{ completed: number; errors: Event[] }> {
  const starts = clients.map((client) => client.events.length);
  const since = (index: number, type: string) => clients[index]!.events.slice(starts[index]).filter((event) => event.type === type);
  const completions = (index: number) => since(index, 'response_complete').length;
  const errors = () => clients.flatMap((_, index) => since(index, 'error'));
  const senderIndex = (round: number) => round % clients.length;
  const send = (round: number) => clients[senderIndex(round)]!.send({ type: 'chat', ...options.chat(round) });
  let refused: () => void = () => undefined;
  const aRefusal = new Promise<void>((resolve) => (refused = resolve));
  // Registered after each client's own listener, so its events already hold the message.
  const listeners = clients.map((_, index) => (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    const type = (JSON.parse(data.toString()) as Event).type;
    if (type === 'error') refused();
    if (type !== 'response_complete') return;
    // The next round's client sends the moment it sees the previous round end.
    const round = completions(index);
    if (round < rounds && senderIndex(round) === index) send(round);
  });
  for (const [index, client] of clients.entries()) client.socket.on('message', listeners[index]!);
  try {
    send(0);
    for (let round = 0; round < rounds && errors().length === 0; round++) {
      // A refused chat starts no run: what `each` waits for would never come.
      await Promise.race([options.each?.(round), aRefusal]);
      const watcher = senderIndex(round + 1);
      await clients[watcher]!.waitUntil(() => (completions(watcher) > round || errors().length > 0 ? true : undefined), 60_000);
    }
    // Every client follows the session: each sees every run end (the last one too, wherever it ran).
    if (errors().length === 0)
      await Promise.all(
        clients.map((client, index) => client.waitUntil(() => (completions(index) >= rounds || errors().length > 0 ? true : undefined), 60_000)),
      );
    return { completed: Math.min(...clients.map((_, index) => completions(index))), errors: errors() };
  } finally {
    for (const [index, client] of clients.entries()) client.socket.off('message', listeners[index]!);
  }
}
