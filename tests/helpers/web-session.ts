/** The `session` message a web-app state test starts from: these fields over a plain scripted session. */
export function sessionMessage(overrides: Record<string, unknown> = {}) {
  return {
    type: 'session' as const,
    session_id: 's-1',
    protocol: 1,
    model: 'scripted',
    limits: { max_steps_default: 4, max_steps_limit: 8 },
    tools: [] as Array<{ name: string; description: string; source: string }>,
    ...overrides,
  };
}

/** The calculator as the session lists it. */
export const CALCULATOR = { name: 'calculator', description: 'math', source: 'builtin' };
