import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SessionFiles } from '@stepwise/backend';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let server: TestServer;
let client: TestClient;
let sessionId: string;

beforeEach(async () => {
  // Thirty uploads race at once here: more than one client may have going by default.
  server = await startStepwise({ SESSION_FILES_MAX: '10', MAX_UPLOADS_PER_CLIENT: '50' });
  client = await TestClient.connect(server.wsUrl);
  sessionId = String(client.session.session_id);
});

afterEach(() =>
  closeAll(
    () => client?.close(),
    () => server?.close(),
  ),
);

async function upload(name: string, body: string): Promise<{ status: number; code?: string }> {
  const response = await fetch(`${server.url}/api/sessions/${sessionId}/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'text/plain' },
  });
  const json = (await response.json()) as { error?: { code: string } };
  return { status: response.status, ...(json.error ? { code: json.error.code } : {}) };
}

const folderNames = () => readdirSync(join(server.container.resolve(SessionFiles).root, sessionId)).sort();

describe('the number of files a session may hold', () => {
  it('is never exceeded by uploads that race for the last places', async () => {
    const names = Array.from({ length: 30 }, (_, index) => `upload-${String(index).padStart(2, '0')}.txt`);
    const results = await Promise.all(names.map((name) => upload(name, `file ${name}`)));

    const stored = names.filter((_, index) => results[index]!.status === 201);
    expect(stored).toHaveLength(10);
    expect(results.filter((result) => result.status !== 201)).toEqual(Array(20).fill({ status: 400, code: 'too_many_files' }));
    // Exactly the accepted files, and no temporary file left behind by a refused one.
    expect(folderNames()).toEqual(stored.sort());
  });

  it('still lets a full session replace its files, and one name written twice at once takes one place', async () => {
    for (let index = 0; index < 9; index++) expect((await upload(`file-${index}.txt`, 'x')).status).toBe(201);
    const twice = await Promise.all([upload('last.txt', 'first'), upload('last.txt', 'second')]);
    expect(twice.map((result) => result.status)).toEqual([201, 201]);
    expect(await upload('file-0.txt', 'replaced')).toEqual({ status: 201 });
    expect(await upload('one-too-many.txt', 'x')).toEqual({ status: 400, code: 'too_many_files' });
    expect(folderNames()).toHaveLength(10);
  });
});
