import { randomBytes } from 'node:crypto';
import type { Tool as McpToolDefinition } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerStatus } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import { z } from 'zod';
import type { Config } from '../config/config.ts';
import type { McpServerConfig } from '../config/config-file.ts';
import { SessionFiles } from '../files/session-files.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import type { Tool } from '../tools/tool.ts';
import { ToolRegistry } from '../tools/tool-registry.ts';
import { McpServerConnection } from './mcp-server-connection.ts';
import { describeToolResult, extensionFor } from './mcp-results.ts';

const MAX_TOOL_NAME = 64;
const MAX_DESCRIPTION = 1_024;
const AnyObject = z.record(z.string(), z.unknown());

/**
 * The MCP servers of the config file. Connects them all in parallel, keeps each server's tools in
 * the ToolRegistry as `SERVER__TOOL` (listed as unavailable while the server is down), and closes
 * them at shutdown.
 */
@injectable()
export class McpManager {
  private connections: McpServerConnection[] = [];
  private readonly listeners: Array<() => void> = [];
  /** Once start has run, a server added later (a settings change) connects at once. */
  private started = false;

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(ToolRegistry) private readonly registry: ToolRegistry,
    @inject(SessionFiles) private readonly files: SessionFiles,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    for (const [name, server] of Object.entries(config.mcp.servers)) this.add(name, server);
  }

  private add(name: string, server: McpServerConfig): McpServerConnection {
    const connection: McpServerConnection = new McpServerConnection(
      name,
      server,
      {
        retryBaseMs: this.config.mcp.retryBaseMs,
        retryMaxMs: this.config.mcp.retryMaxMs,
        // Generous: a first `npx -y` may download the server before it starts.
        connectTimeoutMs: 60_000,
        onChange: () => this.refresh(connection),
      },
      this.logger.child({ component: 'mcp' }),
    );
    this.connections.push(connection);
    return connection;
  }

  /**
   * Makes the servers these (a settings change): a server no longer listed, or listed otherwise,
   * is closed and its tools leave the registry; a new or changed one connects (in the background,
   * retrying as at startup). Servers whose entry is unchanged keep their connection.
   */
  async reconcile(servers: Record<string, McpServerConfig>): Promise<void> {
    const wanted = new Map(Object.entries(servers));
    const leaving = this.connections.filter((connection) => JSON.stringify(wanted.get(connection.name)) !== JSON.stringify(connection.config));
    this.connections = this.connections.filter((connection) => !leaving.includes(connection));
    for (const connection of this.connections) wanted.delete(connection.name);
    await Promise.all(leaving.map((connection) => connection.close()));
    for (const connection of leaving) this.registry.replaceSource(connection.name, []);
    const joining = [...wanted].map(([name, server]) => this.add(name, server));
    if (leaving.length || joining.length) {
      this.logger.info({ closed: leaving.map((each) => each.name), added: joining.map((each) => each.name) }, 'MCP servers changed');
      for (const listener of this.listeners) listener();
    }
    if (this.started) for (const connection of joining) void connection.start();
  }

  /**
   * Starts every server at once and waits for them, at most `startupWaitMs`; servers still
   * starting after that (or failing) keep trying in the background. Never throws.
   */
  async start(): Promise<void> {
    this.started = true;
    if (this.connections.length === 0) return;
    const all = Promise.all(this.connections.map((connection) => connection.start()));
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.config.mcp.startupWaitMs);
    });
    await Promise.race([all, wait]);
    clearTimeout(timer);
    const connected = this.connections.filter((connection) => connection.status === 'connected').length;
    this.logger.info({ servers: this.connections.length, connected }, 'MCP servers started');
  }

  status(): McpServerStatus[] {
    return this.connections.map((connection) => connection.snapshot());
  }

  /** Told when a server's status or tools change. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.close()));
  }

  /** Puts the server's current tools into the registry. */
  private refresh(connection: McpServerConnection): void {
    // A server closed by a settings change may still report its end: its tools are gone already.
    if (!this.connections.includes(connection)) return;
    const tools: Tool[] = [];
    const taken = new Set<string>();
    for (const definition of connection.tools) {
      const name = toolName(connection.name, definition.name);
      if (taken.has(name)) {
        this.logger.warn({ mcp_server: connection.name, tool: definition.name }, 'two MCP tools map to one name; the second is left out');
        continue;
      }
      taken.add(name);
      tools.push(this.adapt(connection, definition, name));
    }
    this.registry.replaceSource(connection.name, tools);
    for (const listener of this.listeners) listener();
  }

  /** One MCP tool as a Stepwise tool. */
  private adapt(connection: McpServerConnection, definition: McpToolDefinition, name: string): Tool<Record<string, unknown>> {
    // Read at each call: an admin may change TOOL_TIMEOUT_MS's setting in the app.
    const { tools: toolSettings } = this.config;
    const files = this.files;
    const description = (definition.description ?? definition.title ?? definition.name).slice(0, MAX_DESCRIPTION);
    return {
      name,
      description,
      source: connection.name,
      parameters: AnyObject,
      jsonSchema: { ...definition.inputSchema, type: 'object' },
      // An MCP tool asks a person first unless its server says it only reads.
      approval: definition.annotations?.readOnlyHint === true ? () => 'auto' : () => 'ask',
      available: () => connection.status === 'connected',
      async execute(args, context) {
        const result = await connection.callTool(definition.name, args, {
          signal: context.signal,
          // The registry's own timeout (the same length) aborts first, which cancels on the server.
          timeoutMs: toolSettings.timeoutMs + 1_000,
          askUser: context.askUser,
          onProgress: context.onProgress,
        });
        return describeToolResult(result, async (bytes, mimeType, kind) => {
          const fileName = `${connection.name}-${kind}-${randomBytes(4).toString('hex')}.${extensionFor(mimeType)}`;
          const saved = await files.write(context.sessionId, fileName, bytes, { source: connection.name, runId: context.runId, signal: context.signal });
          return saved.name;
        });
      },
    };
  }
}

/** `SERVER__TOOL`, in the alphabet and length models accept for function names. */
export function toolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, MAX_TOOL_NAME);
}
