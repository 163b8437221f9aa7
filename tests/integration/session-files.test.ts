import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SessionFiles } from '@stepwise/backend';
import { beforeEach, describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise({ FILE_MAX_BYTES: '4096' }, { eachTest: true });
let root: string;
let sessionId: string;

beforeEach(() => {
  root = stepwise.server.container.resolve(SessionFiles).root;
  sessionId = stepwise.client.session.session_id;
});

function upload(name: string | undefined, body: string | Uint8Array<ArrayBuffer>, id = sessionId) {
  const query = name === undefined ? '' : `?name=${encodeURIComponent(name)}`;
  return fetch(`${stepwise.server.url}/api/sessions/${id}/files${query}`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });
}

const folder = () => join(root, sessionId);
const listed = async () => (await (await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files`)).json()).files as { name: string; size: number }[];

describe('uploading session files', () => {
  it('stores an upload, announces it in the log, lists it and serves it back as a download', async () => {
    const response = await upload('notes.txt', 'hello files');
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ file: { name: 'notes.txt', size: 11 } });
    expect(await stepwise.client.waitFor('file_saved')).toMatchObject({ file: { name: 'notes.txt', size: 11 }, source: 'user', seq: expect.any(Number) });
    expect(await listed()).toEqual([expect.objectContaining({ name: 'notes.txt', size: 11 })]);

    const download = await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/notes.txt`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(download.headers.get('content-disposition')).toContain('attachment');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await download.text()).toBe('hello files');

    expect((await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/notes.txt`, { method: 'DELETE' })).status).toBe(204);
    expect(await stepwise.client.waitFor('file_deleted')).toMatchObject({ name: 'notes.txt' });
    expect(await listed()).toEqual([]);
  });

  it('keeps unicode names and replaces characters that file systems reserve', async () => {
    expect((await upload('résumé 2026.txt', 'a')).status).toBe(201);
    expect(await (await upload('what?: "a" <b>|*.txt', 'b')).json()).toMatchObject({ file: { name: 'what__ _a_ _b___.txt' } });
    const download = await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/${encodeURIComponent('résumé 2026.txt')}`);
    expect(download.headers.get('content-disposition')).toContain("filename*=UTF-8''r%C3%A9sum%C3%A9%202026.txt");
  });

  it.each([
    ['../evil.txt'],
    ['../../../../tmp/evil.txt'],
    ['/etc/passwd'],
    ['a/b.txt'],
    ['..\\evil.txt'],
    ['..'],
    ['.'],
    ['.hidden'],
    ['nul\0byte.txt'],
    ['x'.repeat(256)],
    [''],
  ])('refuses the name %j and writes nothing', async (name) => {
    const response = await upload(name, 'evil');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_file_name' } });
    expect(await listed()).toEqual([]);
    expect(existsSync(join(dirname(root), 'evil.txt'))).toBe(false);
    expect(existsSync(join(root, 'evil.txt'))).toBe(false);
  });

  it('refuses an upload without a name', async () => {
    const response = await upload(undefined, 'x');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_file_name' } });
  });

  it('refuses a file over the size limit and leaves nothing half-written', async () => {
    const response = await upload('big.bin', new Uint8Array(5000));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'file_too_large' } });
    // A streamed body with no length given is cut off at the limit too.
    const chunks = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(1000));
        controller.close();
      },
    });
    const streamed = await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files?name=stream.bin`, {
      method: 'POST',
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await listed()).toEqual([]);
    expect(existsSync(folder()) ? readdirSync(folder()) : []).toEqual([]);
  });

  it('answers 404 for an unknown session and 400 for a malformed id', async () => {
    expect((await upload('a.txt', 'x', '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await upload('a.txt', 'x', '..')).status).toBe(404);
    expect((await upload('a.txt', 'x', 'not-a-session')).status).toBe(400);
    expect((await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/missing.txt`)).status).toBe(404);
  });

  it('refuses to serve a symbolic link planted in the session folder', async () => {
    await upload('real.txt', 'x');
    symlinkSync('/etc/passwd', join(folder(), 'link.txt'));
    const response = await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/link.txt`);
    expect(response.status).toBe(400);
    expect(await response.text()).not.toContain('root:');
    expect((await listed()).map((file) => file.name)).toEqual(['real.txt']);
  });

  it('deleting the session deletes its files', async () => {
    await upload('notes.txt', 'x');
    stepwise.client.chat('hi');
    stepwise.llm.enqueue({ text: 'Hello.' });
    await stepwise.client.untilComplete();
    expect((await fetch(`${stepwise.server.url}/api/sessions/${sessionId}`, { method: 'DELETE' })).status).toBe(204);
    expect(existsSync(folder())).toBe(false);
  });
});

describe('the file tools in an agent run', () => {
  it('lists the files in the reason prompt, reads with offset and length, writes a file the user can download', async () => {
    await upload('notes.txt', `${'a'.repeat(10)}The secret is 7.`);
    stepwise.llm.enqueue(
      { text: reasonText('Read the notes.') },
      {
        toolCalls: [
          { id: 'list', name: 'list_files', arguments: {} },
          { id: 'read', name: 'read_file', arguments: { name: 'notes.txt', offset: 10, length: 13 } },
          { id: 'write', name: 'write_file', arguments: { name: 'answer.md', content: '# Secret\n7' } },
        ],
      },
      { text: observeText('Done.', { final_answer: 'The secret is 7; see answer.md.' }) },
    );
    stepwise.client.chat('What is the secret?', { agent_mode: true, tool_approval: { write_file: 'auto' } });
    const events = await stepwise.client.untilComplete();
    const reason = stepwise.llm.requests.find((request) => request.phase === 'reason')!;
    expect(reason.body.messages[0]!.content).toContain('notes.txt');

    const results = Object.fromEntries(events.filter((event) => event.type === 'tool_complete').map((event) => [event.tool_call_id, String(event.result)]));
    expect(results.list).toContain('notes.txt');
    expect(results.read).toBe('notes.txt: bytes 10-23 of 26, 1 line in all\nThe secret is\n[3 more bytes: read_file with offset 23]');
    expect(results.write).toContain('answer.md');
    const saved = events.find((event) => event.type === 'file_saved' && (event.file as { name: string }).name === 'answer.md');
    const runId = events.find((event) => event.update_type === 'agent_start')!.run_id;
    expect(saved).toMatchObject({ source: 'agent', run_id: runId });
    expect(await (await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/answer.md`)).text()).toBe('# Secret\n7');
  });

  it('refuses paths that leave the session folder, links, NUL bytes and long names; the run goes on', async () => {
    await upload('ok.txt', 'fine');
    mkdirSync(folder(), { recursive: true });
    symlinkSync('/etc/passwd', join(folder(), 'link.txt'));
    const attempts = [
      { name: 'read_file', arguments: { name: '../../../../etc/passwd' } },
      { name: 'read_file', arguments: { name: '/etc/passwd' } },
      { name: 'read_file', arguments: { name: 'link.txt' } },
      { name: 'read_file', arguments: { name: 'ok.txt\0.png' } },
      { name: 'read_file', arguments: { name: 'y'.repeat(300) } },
      { name: 'write_file', arguments: { name: '../escape.txt', content: 'x' } },
      { name: 'write_file', arguments: { name: 'link.txt', content: 'overwrite the target' } },
      { name: 'write_file', arguments: { name: `${'z'.repeat(300)}.txt`, content: 'x' } },
    ].map((call, index) => ({ id: `bad_${index}`, ...call }));
    stepwise.llm.enqueue(
      { text: reasonText('Try to escape.') },
      { toolCalls: attempts },
      { text: observeText('All refused.', { final_answer: 'I could not.' }) },
    );
    stepwise.client.chat('Read /etc/passwd', { agent_mode: true, tool_approval: { write_file: 'auto' } });
    const events = await stepwise.client.untilComplete();
    const errors = events.filter((event) => event.type === 'tool_error');
    expect(errors.map((event) => event.tool_call_id).sort()).toEqual(attempts.map((call) => call.id).sort());
    for (const error of errors) expect(String(error.error)).not.toContain('root:');
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(existsSync(join(root, 'escape.txt'))).toBe(false);
    expect((await listed()).map((file) => file.name)).toEqual(['ok.txt']);
  });

  it('reports a binary file instead of pouring bytes into the model', async () => {
    await upload('blob.bin', new Uint8Array([0, 1, 2, 3, 0, 255]));
    stepwise.llm.enqueue(...answerAfter('Read it.', [{ id: 'read', name: 'read_file', arguments: { name: 'blob.bin' } }], 'Binary.', 'It is binary.'));
    stepwise.client.chat('Read blob.bin', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(String(events.find((event) => event.type === 'tool_error')?.error)).toContain('binary');
  });
});
