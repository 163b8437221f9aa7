// A plain WebSocket client of one Stepwise session, as the concurrency, streaming and footprint
// sections drive it from the runner's own process.
import WebSocket from 'ws';
import { now } from './settings.ts';

export interface Client {
  socket: WebSocket;
  /** Resolves at the first `response_complete`. */
  done: Promise<void>;
  /** Lag from the model server stamping a reply to this client receiving its agent_reason / agent_observe event, ms. */
  lags: number[];
  /** Runs of this session that ended in an error (agent_error, or an error before response_complete). */
  failures: number;
}

/** Opens a session; resolves once the server has sent `session`. */
export function openClient(wsUrl: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl);
    const client: Client = { socket, done: Promise.resolve(), lags: [], failures: 0 };
    let finish: () => void = () => undefined;
    client.done = new Promise<void>((resolveDone) => (finish = resolveDone));
    const { lags } = client;
    socket.on('message', (data) => {
      const received = now();
      const event = JSON.parse(data.toString()) as { type: string; update_type?: string; content?: string };
      if (event.type === 'session') resolve(client);
      if (event.update_type === 'agent_error' || event.type === 'error') client.failures++;
      if (event.update_type === 'agent_reason' || event.update_type === 'agent_observe') {
        const sentAt = Number(/(\d{13}\.\d+)/.exec(event.content ?? '')?.[1]);
        if (sentAt) lags.push(received - sentAt);
      }
      if (event.type === 'response_complete') finish();
    });
    socket.on('error', reject);
  });
}

/** The three-step calculator run every section uses, as a chat message. */
export const AGENT_RUN = JSON.stringify({ type: 'chat', content: 'Count', agent_mode: true, agent_max_steps: 3 });

/** One agent run in a new session, start to `response_complete`. */
export async function warmUpChat(wsUrl: string): Promise<void> {
  const client = await openClient(wsUrl);
  client.socket.send(AGENT_RUN);
  await client.done;
  client.socket.close();
}
