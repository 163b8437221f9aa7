import type { RecordedRequest } from '../fixtures/scripted-llm-server.ts';

/** A promise a test settles when it wants the model to answer (a scripted reply's `after`). */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** How many of a request's user turns hold `text`: a person's message reaches the model as one. */
export function userTurns(request: RecordedRequest, text: string): number {
  return request.body.messages.filter((message) => message.role === 'user' && (message.content ?? '').includes(text)).length;
}
