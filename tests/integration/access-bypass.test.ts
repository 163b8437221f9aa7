import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, upgradeHeaders } from '../helpers/raw-http.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

const TOKEN = 'test-token-0123456789abcdef';
const FILE = 'notes.txt';

/** Every route the server has that is not open to everyone, with a body where it takes one. */
const ROUTES: { method: string; path: string; body?: string; upgrade?: boolean }[] = [
  { method: 'GET', path: '/api/sessions' },
  { method: 'GET', path: '/api/sessions/ID' },
  { method: 'GET', path: '/api/sessions/ID/events' },
  { method: 'GET', path: '/api/sessions/ID/files' },
  { method: 'GET', path: `/api/sessions/ID/files/${FILE}` },
  { method: 'HEAD', path: `/api/sessions/ID/files/${FILE}` },
  { method: 'POST', path: '/api/sessions/ID/files?name=planted.txt', body: 'planted' },
  { method: 'DELETE', path: `/api/sessions/ID/files/${FILE}` },
  { method: 'DELETE', path: '/api/sessions/ID' },
  { method: 'GET', path: '/ws?session_id=ID', upgrade: true },
];

const percent = (char: string, upper = true) => {
  const hex = char.charCodeAt(0).toString(16);
  return `%${upper ? hex.toUpperCase() : hex}`;
};

/** The ways one path can be spelled so that a router still (or almost) matches it. */
function spellings(path: string, origin: string): [string, string][] {
  const [pathname, query] = path.split('?') as [string, string | undefined];
  const withQuery = (spelled: string) => (query === undefined ? spelled : `${spelled}?${query}`);
  const first = pathname[1]!;
  const rest = pathname.slice(2);
  const secondSlash = pathname.indexOf('/', 1);
  const variants: [string, string][] = [
    ['as is', withQuery(pathname)],
    ['first letter %-encoded', withQuery(`/${percent(first)}${rest}`)],
    ['first letter %-encoded, lower-case hex', withQuery(`/${percent(first, false)}${rest}`)],
    ['whole path %-encoded', withQuery([...pathname].map((char) => (char === '/' ? char : percent(char))).join(''))],
    ['double-encoded', withQuery(`/%25${percent(first).slice(1)}${rest}`)],
    ['upper case', withQuery(pathname.toUpperCase())],
    ['mixed case', withQuery(pathname.replace(/[a-z]/g, (char, index: number) => (index % 2 ? char.toUpperCase() : char)))],
    ['trailing slash', withQuery(`${pathname}/`)],
    ['trailing dot', withQuery(`${pathname}.`)],
    ['trailing /.', withQuery(`${pathname}/.`)],
    ['double leading slash', withQuery(`/${pathname}`)],
    ['dot segment', withQuery(`/.${pathname}`)],
    ['dot-dot segment', withQuery(`/x/..${pathname}`)],
    ['encoded dot-dot segment', withQuery(`/x/%2e%2e${pathname}`)],
    ['semicolon parameter', withQuery(`${pathname};x=1`)],
    ['absolute form', withQuery(`${origin}${pathname}`)],
    ['absolute form, upper-case scheme', withQuery(`${origin.replace('http', 'HTTP')}${pathname}`)],
  ];
  if (secondSlash > 0) {
    variants.push(['slash %-encoded', withQuery(`${pathname.slice(0, secondSlash)}%2F${pathname.slice(secondSlash + 1)}`)]);
    variants.push(['slash %-encoded, lower case', withQuery(`${pathname.slice(0, secondSlash)}%2f${pathname.slice(secondSlash + 1)}`)]);
    variants.push(['backslash', withQuery(`${pathname.slice(0, secondSlash)}\\${pathname.slice(secondSlash + 1)}`)]);
  }
  return variants;
}

describe('access on every route, whatever the spelling of the request target', () => {
  let server: TestServer;
  let sessionId: string;
  const authorized = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN, ALLOWED_ORIGINS: 'https://chat.example.com' });
    const client = await TestClient.connect(server.wsUrl, {}, { headers: authorized });
    sessionId = client.session.session_id;
    client.chat('hello');
    await client.waitFor('response_complete');
    client.close();
    const upload = await fetch(`${server.url}/api/sessions/${sessionId}/files?name=${FILE}`, { method: 'POST', headers: authorized, body: 'kept' });
    expect(upload.status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('refuses every spelling of every protected route without the token, and nothing changes', async () => {
    const origin = new URL(server.url).origin;
    const admitted: string[] = [];
    for (const route of ROUTES) {
      for (const [spelling, target] of spellings(route.path.replace('ID', sessionId), origin)) {
        const response = await rawRequest(server.url, {
          method: route.method,
          target,
          ...(route.upgrade ? { headers: upgradeHeaders() } : {}),
          ...(route.body === undefined ? {} : { body: route.body }),
        });
        if (response.status < 400 || response.status >= 500) admitted.push(`${route.method} ${target} (${spelling}) → ${response.status}`);
      }
    }
    expect(admitted).toEqual([]);

    // The session, its log and its file are all still there, and nothing was planted.
    const session = await fetch(`${server.url}/api/sessions/${sessionId}`, { headers: authorized });
    expect(session.status).toBe(200);
    const files = (await (await fetch(`${server.url}/api/sessions/${sessionId}/files`, { headers: authorized })).json()) as { files: { name: string }[] };
    expect(files.files.map((file) => file.name)).toEqual([FILE]);
  });

  it('refuses upgrades of every spelling of /ws from a foreign origin, even with the token', async () => {
    const origin = new URL(server.url).origin;
    for (const [spelling, target] of spellings(`/ws?session_id=${sessionId}`, origin)) {
      const response = await rawRequest(server.url, {
        target,
        headers: upgradeHeaders({ origin: 'https://evil.example.com', ...authorized }),
      });
      expect(response.status, `${target} (${spelling})`).not.toBe(101);
      expect(response.status, `${target} (${spelling})`).toBeGreaterThanOrEqual(400);
    }
  });

  it('serves each route as written with the token', async () => {
    const origin = new URL(server.url).origin;
    for (const route of ROUTES.filter((route) => route.method !== 'DELETE')) {
      const response = await rawRequest(server.url, {
        method: route.method,
        target: route.path.replace('ID', sessionId),
        headers: route.upgrade ? upgradeHeaders(authorized) : authorized,
        ...(route.body === undefined ? {} : { body: route.body }),
      });
      expect(response.status, `${route.method} ${route.path}`).toBeLessThan(300);
    }
    // The absolute form itself is not refused: only what it reaches is checked.
    const absolute = await rawRequest(server.url, { target: `${origin}/api/sessions/${sessionId}`, headers: authorized });
    expect(absolute.status).toBe(200);
  });

  it('leaves the health check and the web app open', async () => {
    expect((await rawRequest(server.url, { target: '/api/health' })).status).toBe(200);
    expect((await rawRequest(server.url, { target: '/%61pi/health' })).status).toBe(200);
    expect((await rawRequest(server.url, { target: '/' })).status).toBe(200);
  });
});

describe('the Host header (DNS rebinding)', () => {
  let server: TestServer;

  afterAll(async () => {
    await server?.close();
  });

  it('refuses REST calls and upgrades sent to a name the server does not answer to, even without a token', async () => {
    server = await startStepwise();
    const attacker = { host: `attacker.example:${new URL(server.url).port}` };
    const rebound = { ...attacker, origin: `http://${attacker.host}` };
    for (const headers of [attacker, rebound]) {
      const list = await rawRequest(server.url, { target: '/api/sessions', headers });
      expect(list.status).toBe(421);
      expect(JSON.parse(list.body)).toMatchObject({ error: { code: 'forbidden_host' } });
      expect((await rawRequest(server.url, { target: '/', headers })).status).toBe(421);
      const socket = await rawRequest(server.url, { target: '/ws', headers: upgradeHeaders(headers) });
      expect(socket.status).toBe(421);
    }
    // An absolute-form target naming another host is refused the same way.
    const absolute = await rawRequest(server.url, { target: 'http://attacker.example/api/sessions' });
    expect(absolute.status).toBe(421);
    // A request without any Host cannot be told apart from a rebinding one.
    const hostless = await rawRequest(server.url, { target: '/api/sessions', headers: { host: undefined } });
    expect(hostless.status).toBeGreaterThanOrEqual(400);
  });

  it('answers to loopback names and IP addresses, and the health check to any name', async () => {
    server = await startStepwise();
    const { port } = new URL(server.url);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `app.localhost:${port}`, `LOCALHOST.:${port}`, `192.168.1.20:${port}`]) {
      expect((await rawRequest(server.url, { target: '/api/sessions', headers: { host } })).status, host).toBe(200);
    }
    expect((await rawRequest(server.url, { target: '/api/health', headers: { host: 'anything.example' } })).status).toBe(200);
  });

  it('answers to ALLOWED_HOSTS and the host of PUBLIC_ORIGIN, whose origin may then open the socket', async () => {
    server = await startStepwise({ ALLOWED_HOSTS: 'chat.example.com,*.corp.example', PUBLIC_ORIGIN: 'https://stepwise.example.org' });
    for (const host of ['chat.example.com', 'a.corp.example', 'stepwise.example.org']) {
      expect((await rawRequest(server.url, { target: '/api/sessions', headers: { host } })).status, host).toBe(200);
    }
    expect((await rawRequest(server.url, { target: '/api/sessions', headers: { host: 'corp.example.evil' } })).status).toBe(421);
    const publicOrigin = await rawRequest(server.url, {
      target: '/ws',
      headers: upgradeHeaders({ host: 'stepwise.example.org', origin: 'https://stepwise.example.org' }),
    });
    expect(publicOrigin.status).toBe(101);
  });

  it('never takes the allowed origin from the Host header alone: a foreign Origin is refused on REST and upgrades', async () => {
    server = await startStepwise();
    const { port } = new URL(server.url);
    const headers = { host: `localhost:${port}`, origin: 'http://attacker.example' };
    expect((await rawRequest(server.url, { target: '/api/sessions', headers })).status).toBe(403);
    expect((await rawRequest(server.url, { method: 'DELETE', target: '/api/sessions/00000000-0000-4000-8000-000000000000', headers })).status).toBe(403);
    expect((await rawRequest(server.url, { target: '/ws', headers: upgradeHeaders(headers) })).status).toBe(403);
    // The page's own origin (here, localhost) still works.
    expect((await rawRequest(server.url, { target: '/ws', headers: upgradeHeaders({ ...headers, origin: `http://localhost:${port}` }) })).status).toBe(101);
  });
});
