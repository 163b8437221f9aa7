import { calculatorTool, configFromEnv, ToolRegistry, type Tool } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const context = () => ({ signal: new AbortController().signal, sessionId: 's', runId: 'r' });
const echo: Tool<{ text: string }> = {
  name: 'echo',
  description: 'Echo',
  source: 'builtin',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
};
const slow: Tool<Record<string, never>> = {
  name: 'slow',
  description: 'Never ends',
  source: 'builtin',
  parameters: z.object({}),
  execute: () => new Promise(() => undefined),
};

function registry(env: Record<string, string> = {}) {
  return new ToolRegistry(configFromEnv(env), [calculatorTool, echo as Tool, slow as Tool]);
}

describe('the tool registry', () => {
  it('checks a person’s edited arguments against the zod schema, and against a tool’s own JSON Schema', () => {
    const remote: Tool<Record<string, unknown>> = {
      name: 'files__move',
      description: 'Move a file',
      source: 'files',
      parameters: z.record(z.string(), z.unknown()),
      jsonSchema: { type: 'object', properties: { from: { type: 'string' }, to: { type: 'string' } }, required: ['from', 'to'] },
      approval: () => 'ask',
      execute: async () => 'moved',
    };
    const tools = new ToolRegistry(configFromEnv({}), [echo as Tool, remote as Tool]);
    expect(tools.checkArguments('echo', { text: 'hi' })).toBeUndefined();
    expect(tools.checkArguments('echo', { text: 3 })).toMatch(/Invalid arguments for echo: text:/);
    expect(tools.checkArguments('files__move', { from: 'a', to: 'b' })).toBeUndefined();
    expect(tools.checkArguments('files__move', { from: 'a' })).toMatch(/Invalid arguments for files__move: arguments: must have required property 'to'/);
    expect(tools.checkArguments('files__move', { from: 'a', to: 7 })).toMatch(/files__move: to: must be string/);
    expect(tools.checkArguments('nothing', {})).toBe('There is no tool nothing');
  });

  it('gives each tool its approval policy: its hint, under the config file’s rules and a run’s own choices', () => {
    const write: Tool<Record<string, unknown>> = {
      name: 'write_file',
      description: 'w',
      source: 'builtin',
      parameters: z.record(z.string(), z.unknown()),
      approval: () => 'ask',
      execute: async () => 'ok',
    };
    const config = configFromEnv({});
    const tools = new ToolRegistry({ ...config, agent: { ...config.agent, approval: [{ pattern: 'ec*', policy: 'deny' }] } }, [
      echo as Tool,
      write as Tool,
      calculatorTool,
    ]);
    expect(Object.fromEntries(tools.list().map((tool) => [tool.name, tool.approval]))).toEqual({ echo: 'deny', write_file: 'ask', calculator: 'auto' });
    // A run may loosen what the rules leave open, never a pinned deny.
    expect(tools.policy('write_file', {}, { write_file: 'auto' })).toBe('auto');
    expect(tools.policy('echo', {}, { echo: 'auto' })).toBe('deny');
    expect(tools.policy('calculator', {}, { calculator: 'deny' })).toBe('deny');
  });

  it('derives JSON schemas for the model from the zod parameters', () => {
    const [schema] = registry().schemas(['calculator']);
    expect(schema).toMatchObject({
      name: 'calculator',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    });
    expect(schema!.parameters).not.toHaveProperty('$schema');
  });

  it('caps large results for the model and the client', async () => {
    const outcome = await registry({ TOOL_RESULT_MAX_CHARS: '100' }).execute(
      { name: 'echo', arguments: JSON.stringify({ text: 'x'.repeat(500) }) },
      new Set(['echo']),
      context(),
    );
    expect(outcome.ok).toBe(true);
    expect(outcome.content).toMatch(/^x{100}… \[truncated 400 characters\]$/);
  });

  it('refuses a tool that is not enabled for the run', async () => {
    const outcome = await registry().execute({ name: 'echo', arguments: '{"text":"hi"}' }, new Set(['calculator']), context());
    expect(outcome).toMatchObject({ ok: false, error: 'Unknown tool "echo"' });
  });

  it('times out a tool that never finishes (giving it a grace period to wind down)', async () => {
    const outcome = await registry({ TOOL_TIMEOUT_MS: '20' }).execute({ name: 'slow', arguments: '' }, new Set(['slow']), context());
    expect(outcome).toMatchObject({ ok: false, error: 'slow timed out after 20 ms' });
  });

  it('rejects when the run stops, after the call has settled or its grace period has passed', async () => {
    const controller = new AbortController();
    const pending = registry().execute({ name: 'slow', arguments: '{}' }, new Set(['slow']), { ...context(), signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});
