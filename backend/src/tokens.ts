/** Injection tokens; every registration is in container.ts. */
export const TOKENS = {
  Config: Symbol('Config'),
  Logger: Symbol('Logger'),
  LlmClient: Symbol('LlmClient'),
  PromptProvider: Symbol('PromptProvider'),
  Store: Symbol('Store'),
  BuiltinTools: Symbol('BuiltinTools'),
  Strategies: Symbol('Strategies'),
} as const;
