import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ElicitResult, Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerStatus } from '@stepwise/shared-types';
import type { McpServerConfig } from '../config/config-file.ts';
import { ToolExecutionError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { version } from '../version.ts';
import { type FormSchema, formQuestion, readFormAnswer } from './elicitation.ts';

/**
 * The MCP SDK's client, loaded at the first connection rather than at every start: a server with
 * no MCP server configured never pays its start-up time and memory.
 */
async function loadMcpSdk() {
  const [{ Client }, { getDefaultEnvironment, StdioClientTransport }, { StreamableHTTPClientTransport }, { ElicitRequestSchema }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { Client, getDefaultEnvironment, StdioClientTransport, StreamableHTTPClientTransport, ElicitRequestSchema };
}
type McpSdk = Awaited<ReturnType<typeof loadMcpSdk>>;
let loadingMcpSdk: Promise<McpSdk> | undefined;
const mcpSdk = () =>
  (loadingMcpSdk ??= loadMcpSdk().catch((error: unknown) => {
    loadingMcpSdk = undefined; // the next connection tries again
    throw error;
  }));

/** A call in flight on this server; elicitation requests are asked through its run. */
interface CallInFlight {
  askUser: ((question: string, signal?: AbortSignal) => Promise<string>) | undefined;
}

export interface ConnectionOptions {
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long one connection attempt (start + initialize + list tools) may take. */
  connectTimeoutMs: number;
  /** Told when the status or the tool list changes. */
  onChange: () => void;
}

const STDERR_LINES_KEPT = 5;
const MAX_ELICITATION_ROUNDS = 3;

/**
 * One MCP server from the config file: connects (stdio or Streamable HTTP), lists its tools, and
 * reconnects with jittered exponential backoff whenever it fails to start or goes away, forever and
 * without ever throwing at its owner. Calls carry the run's signal: aborting it makes the SDK send
 * `notifications/cancelled` to the server.
 */
export class McpServerConnection {
  status: McpServerStatus['status'] = 'connecting';
  error: string | undefined;
  retryAt: Date | undefined;
  tools: McpToolDefinition[] = [];

  private client: Client | undefined;
  private attempts = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly stderr: string[] = [];
  private readonly inFlight: CallInFlight[] = [];

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly options: ConnectionOptions,
    private readonly logger: Logger,
  ) {}

  /** The first attempt; resolves once it connected or failed (a retry is then scheduled). */
  start(): Promise<void> {
    return this.connect();
  }

  snapshot(): McpServerStatus {
    return {
      name: this.name,
      transport: this.config.transport,
      status: this.status,
      ...(this.error ? { error: this.error } : {}),
      ...(this.retryAt ? { retry_at: this.retryAt.toISOString() } : {}),
      tools: this.tools.length,
    };
  }

  /** Calls a tool. Stop (the signal) cancels it on the server; a lost connection fails it at once. */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    options: {
      signal: AbortSignal;
      timeoutMs: number;
      askUser?: CallInFlight['askUser'];
      onProgress?: ((progress: { progress: number; total?: number | undefined; message?: string | undefined }) => void) | undefined;
    },
  ): Promise<Record<string, unknown>> {
    const client = this.client;
    if (!client || this.status !== 'connected') {
      throw new ToolExecutionError(`The MCP server "${this.name}" is not connected${this.error ? ` (${this.error})` : ''}; it is being retried`);
    }
    const call: CallInFlight = { askUser: options.askUser };
    this.inFlight.push(call);
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs,
        // A server that reports progress is still working.
        resetTimeoutOnProgress: true,
        onprogress: (progress) => options.onProgress?.({ progress: progress.progress, total: progress.total, message: progress.message }),
      })) as Record<string, unknown>;
    } catch (error) {
      if (options.signal.aborted) throw error;
      if (this.client !== client || isConnectionClosed(error)) {
        throw new ToolExecutionError(`The MCP server "${this.name}" went away during the call${this.lastStderr()}`);
      }
      throw new ToolExecutionError(`${this.name} failed: ${(error as Error).message}`, error);
    } finally {
      this.inFlight.splice(this.inFlight.indexOf(call), 1);
    }
  }

  /** Stops for good (server shutdown): closes the connection, which ends a stdio server's process. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    this.setStatus('connecting', undefined);
    let sdk: McpSdk;
    try {
      sdk = await mcpSdk();
    } catch (error) {
      return this.fail(`the MCP SDK could not be loaded: ${describeError(error)}`);
    }
    if (this.closed) return;
    const { Client, ElicitRequestSchema, ...transports } = sdk;
    const client = new Client(
      { name: 'stepwise', version: version() },
      {
        capabilities: { elicitation: { form: { applyDefaults: true } } },
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (this.client !== client) return;
              if (error) return this.logger.warn({ mcp_server: this.name, err: error }, 'could not refresh the MCP tool list');
              this.tools = tools ?? [];
              this.logger.info({ mcp_server: this.name, tools: this.tools.length }, 'MCP tool list changed');
              this.options.onChange();
            },
          },
        },
      },
    );
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => this.elicit(request.params, extra.signal));
    const transport = this.createTransport(transports);
    client.onclose = () => {
      if (this.client === client) this.lost('the connection closed');
    };
    try {
      const timeout = AbortSignal.timeout(this.options.connectTimeoutMs);
      await client.connect(transport, { timeout: this.options.connectTimeoutMs });
      const tools = await listAllTools(client, timeout);
      if (this.closed) {
        await client.close().catch(() => {});
        return;
      }
      this.client = client;
      this.tools = tools;
      this.attempts = 0;
      this.retryAt = undefined;
      this.logger.info({ mcp_server: this.name, transport: this.config.transport, tools: tools.length }, 'MCP server connected');
      this.setStatus('connected', undefined);
    } catch (error) {
      await client.close().catch(() => {});
      this.fail(`${describeError(error)}${this.lastStderr()}`);
    }
  }

  private createTransport({
    StreamableHTTPClientTransport,
    StdioClientTransport,
    getDefaultEnvironment,
  }: Omit<McpSdk, 'Client' | 'ElicitRequestSchema'>): Transport {
    if (this.config.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers } });
    }
    const transport = new StdioClientTransport({
      command: this.config.command,
      args: this.config.args,
      env: { ...getDefaultEnvironment(), ...this.config.env },
      ...(this.config.cwd ? { cwd: this.config.cwd } : {}),
      stderr: 'pipe',
    });
    // The server's stderr goes to the debug log; its last lines explain a failed start.
    transport.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        this.stderr.push(line.trim().slice(0, 300));
        if (this.stderr.length > STDERR_LINES_KEPT) this.stderr.shift();
        this.logger.debug({ mcp_server: this.name, stderr: line.slice(0, 1000) }, 'MCP server stderr');
      }
    });
    return transport;
  }

  /** The connection went away after it was up: calls in flight have already failed. */
  private lost(reason: string): void {
    this.client = undefined;
    this.fail(`${reason}${this.lastStderr()}`);
  }

  private fail(reason: string): void {
    if (this.closed) return;
    this.attempts++;
    const ceiling = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** (this.attempts - 1));
    const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    this.retryAt = new Date(Date.now() + delay);
    this.logger.warn({ mcp_server: this.name, attempt: this.attempts, retry_in_ms: delay, error: reason }, 'MCP server unavailable');
    this.setStatus('unavailable', reason);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  private setStatus(status: McpServerStatus['status'], error: string | undefined): void {
    this.status = status;
    this.error = error;
    this.options.onChange();
  }

  /**
   * The server asks the user something. It goes to the run whose call is in flight on this server
   * (stdio carries no link from the request to the call; with several calls at once, the newest).
   */
  private async elicit(params: Record<string, unknown>, signal: AbortSignal): Promise<ElicitResult> {
    const call = this.inFlight.at(-1);
    if (!call?.askUser) return { action: 'decline' };
    const message = String(params.message ?? '');
    if (params.mode === 'url') {
      const answer = await call.askUser(`${this.name} asks you to open ${String(params.url)}\n${message}\nAnswer "done" when finished, or "decline".`, signal);
      return /^(decline|no|cancel)$/i.test(answer.trim()) ? { action: 'decline' } : { action: 'accept' };
    }
    const schema = (params.requestedSchema ?? {}) as FormSchema;
    let problem: string | undefined;
    for (let round = 0; round < MAX_ELICITATION_ROUNDS; round++) {
      const answer = readFormAnswer(await call.askUser(formQuestion(this.name, message, schema, problem), signal), schema);
      if (answer.action !== 'retry') return answer.action === 'accept' ? { action: 'accept', content: answer.content as ElicitResult['content'] } : answer;
      problem = answer.problem;
    }
    return { action: 'decline' };
  }

  private lastStderr(): string {
    const last = this.stderr.at(-1);
    return last ? ` (stderr: ${last})` : '';
  }
}

async function listAllTools(client: Client, signal: AbortSignal): Promise<McpToolDefinition[]> {
  const tools: McpToolDefinition[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined, { signal });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

function isConnectionClosed(error: unknown): boolean {
  return (error as { code?: number })?.code === -32000 || /connection closed/i.test((error as Error)?.message ?? '');
}

function describeError(error: unknown): string {
  const message = (error as Error)?.message ?? String(error);
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return `the command was not found (${message})`;
  return message.split('\n')[0]!.slice(0, 300);
}
