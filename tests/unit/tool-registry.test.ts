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
