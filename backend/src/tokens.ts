/** Injection tokens; every registration is in container.ts. */
export const TOKENS = {
  Config: Symbol('Config'),
  Logger: Symbol('Logger'),
  /** Where a client's traceparent goes (tracing/run-tracing.ts, CallerTraces). */
  CallerTraces: Symbol('CallerTraces'),
  LlmClient: Symbol('LlmClient'),
  /** The model adapter itself (openai or demo); LlmClient is it as the app uses it. */
  ModelAdapter: Symbol('ModelAdapter'),
  PromptProvider: Symbol('PromptProvider'),
  Store: Symbol('Store'),
  BuiltinTools: Symbol('BuiltinTools'),
  Strategies: Symbol('Strategies'),
  DemoResponders: Symbol('DemoResponders'),
  ControlBus: Symbol('ControlBus'),
  RunJournal: Symbol('RunJournal'),
  /** Where runs live over the process's life: one process, the Cluster (REDIS_URL), or Restate over either. */
  RunHost: Symbol('RunHost'),
  /** Who holds a session (one process, or a lease among instances). */
  SessionLease: Symbol('SessionLease'),
  /** How a command reaches a session's run, and where an answer is kept. */
  RunRouter: Symbol('RunRouter'),
  /** How instances hear of each other's writes to a session's log. */
  LogFanOut: Symbol('LogFanOut'),
  /** The four above together, as their adapter built them. */
  Hosting: Symbol('Hosting'),
  /** Where runs execute: in this process, or as Restate workflows (RUN_ENGINE). */
  RunEngine: Symbol('RunEngine'),
  /** Sees every event a session logs on this instance (metrics); absent, nothing does. */
  EventObserver: Symbol('EventObserver'),
  /** How instances tell each other that the app settings changed. */
  SettingsNotices: Symbol('SettingsNotices'),
} as const;
