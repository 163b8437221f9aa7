import { beforeEach, describe, expect, it } from 'vitest';
import { brokenPdf, textPdf } from '../fixtures/pdf-maker.ts';
import { answerAfter, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient, answeredInOneStep } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer;
let client: TestClient;
const stepwise = useScriptedStepwise();
const open = stepwise.open;

/** Thirty pages: page N says which page it is, in two lines. */
const report = textPdf(Array.from({ length: 30 }, (_, index) => [`Quarterly report, page ${index + 1}.`, `Sales rose in region ${index + 1}.`]));

function upload(name: string, body: Uint8Array) {
  return fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    body: new Uint8Array(body),
  });
}

describe('PDF attachments', () => {
  beforeEach(async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo', PDF_MAX_PAGES: '40', TOOL_RESULT_MAX_CHARS: '600' }));
    client = open(await TestClient.connect(server.wsUrl));
  });

  it('refuses a malformed PDF, an encrypted one, a renamed file and one over PDF_MAX_PAGES, keeping none', async () => {
    const refusals = [
      ['broken.pdf', brokenPdf(), 'invalid_pdf'],
      ['locked.pdf', textPdf([['secret']], { encrypted: true }), 'encrypted_pdf'],
      ['renamed.pdf', Buffer.from('just some text'), 'invalid_pdf'],
      ['long.pdf', textPdf(Array.from({ length: 41 }, (_, index) => [`page ${index + 1}`])), 'too_many_pages'],
    ] as const;
    for (const [name, body, code] of refusals) {
      const response = await upload(name, body);
      expect(response.status, name).toBe(400);
      expect((await response.json()).error.code, name).toBe(code);
    }
    const listed = (await (await fetch(`${server.url}/api/sessions/${client.session.session_id}/files`)).json()).files;
    expect(listed).toEqual([]);
  });

  it('summarises a 30-page PDF with the demo model: its pages, its words, its first lines', async () => {
    expect((await upload('report.pdf', report)).status).toBe(201);
    client.chat('Summarize report.pdf for me', { agent_mode: true });
    const events = (await client.untilComplete()).filter((event) => 'seq' in event && event.type !== 'file_saved');
    expect(summarize(events)).toEqual(answeredInOneStep('read_file'));
    const answer = String(events.find((event) => event.type === 'assistant_message')!.content);
    expect(answer).toContain('**report.pdf**: a PDF of 30 pages (270 words in all); I read pages 1-');
    expect(answer).toContain('> Quarterly report, page 1.');
    expect(answer).toContain('> Sales rose in region 1.');
  });

  it('reads the pages a message asks for', async () => {
    expect((await upload('report.pdf', report)).status).toBe(201);
    client.chat('Summarize pages 12-14 of report.pdf', { agent_mode: true });
    const events = await client.untilComplete();
    const call = events.find((event) => event.type === 'tool_start');
    expect(call?.arguments).toEqual({ name: 'report.pdf', pages: '12-14' });
    const result = String(events.find((event) => event.type === 'tool_complete')?.result);
    expect(result.split('\n')[0]).toBe('report.pdf: pages 12-14 of 30, 270 words in all');
    expect(result).toContain('--- page 13 ---\nQuarterly report, page 13.\nSales rose in region 13.');
    expect(result).not.toContain('page 15');
    const answer = String(events.find((event) => event.type === 'assistant_message')!.content);
    expect(answer).toContain('I read pages 12-14 (27 words)');
    expect(answer).toContain('> Quarterly report, page 12.');
  });
});

describe('read_file on a PDF', () => {
  beforeEach(async () => {
    ({ llm, server, client } = await stepwise.start());
  });

  it('gives as many pages as the length holds and names the range to read next', async () => {
    expect((await upload('report.pdf', report)).status).toBe(201);
    llm!.enqueue(
      ...answerAfter('Read it.', [{ id: 'read', name: 'read_file', arguments: { name: 'report.pdf', pages: '26-', length: 150 } }], 'Read.', 'Done.'),
    );
    client.chat('Read the end of report.pdf', { agent_mode: true });
    const events = await client.untilComplete();
    const result = String(events.find((event) => event.type === 'tool_complete')?.result);
    expect(result.split('\n')[0]).toBe('report.pdf: pages 26-27 of 30, 270 words in all');
    expect(result.endsWith('[pages 28-30 not read yet: read_file with pages "28-30"]')).toBe(true);
  });

  it('answers a range past the end as a tool error the model can read', async () => {
    expect((await upload('report.pdf', report)).status).toBe(201);
    llm!.enqueue(
      ...answerAfter('Read it.', [{ id: 'read', name: 'read_file', arguments: { name: 'report.pdf', pages: '31-40' } }], 'No such pages.', 'It has 30 pages.'),
    );
    client.chat('Read report.pdf', { agent_mode: true });
    const events = await client.untilComplete();
    expect(String(events.find((event) => event.type === 'tool_error')?.error)).toContain('the PDF has 30 pages');
  });

  it('says an image is an image, not text', async () => {
    expect((await upload('photo.png', Buffer.from('\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x04\0\0\0\x04\x08\x02\0\0\0', 'latin1'))).status).toBe(201);
    llm!.enqueue(...answerAfter('Read it.', [{ id: 'read', name: 'read_file', arguments: { name: 'photo.png' } }], 'An image.', 'It is an image.'));
    client.chat('Read photo.png', { agent_mode: true });
    const events = await client.untilComplete();
    expect(String(events.find((event) => event.type === 'tool_error')?.error)).toContain('is an image; read_file reads text');
  });
});
