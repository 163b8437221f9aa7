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
  /** Several instances: the Cluster, when REDIS_URL is set (absent otherwise). */
  RunHost: Symbol('RunHost'),
  /** Where runs execute: in this process, or as Restate workflows (RUN_ENGINE). */
  RunEngine: Symbol('RunEngine'),
  /** Sees every event a session logs on this instance (metrics); absent, nothing does. */
  EventObserver: Symbol('EventObserver'),
  /** How instances tell each other that the app settings changed. */
  SettingsNotices: Symbol('SettingsNotices'),
} as const;
