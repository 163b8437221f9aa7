import 'reflect-metadata';
import { type DependencyContainer, instanceCachingFactory, container as rootContainer } from 'tsyringe';
import type { ControlBus } from './agent/kernel/control-bus.ts';
import { Cluster } from './cluster/cluster.ts';
import { InProcessEngine, type RunEngine } from './agent/kernel/run-engine.ts';
import { RestateEngine } from './restate/restate-engine.ts';
import { restateHosting } from './restate/restate-run-host.ts';
import { RunKernel } from './agent/kernel/run-kernel.ts';
import type { RunJournal } from './agent/kernel/run-journal.ts';
import { STRATEGIES } from './agent/strategies.ts';
import type { AnyStrategy } from './agent/kernel/strategy.ts';
import { ConnectionHandler } from './chat/connection-handler.ts';
import { HistoryService } from './chat/history-service.ts';
import type { EventObserver } from './chat/session-event-log.ts';
import { Notifier } from './notify/notifier.ts';
import { SessionManager } from './chat/session-manager.ts';
import { Metrics } from './metrics/metrics.ts';
import { type CallerTraces, NO_CALLER_TRACES, type RunTracing } from './tracing/run-tracing.ts';
import type { Config } from './config/config.ts';
import { DemoLlmClient } from './llm/demo-llm-client.ts';
import type { DemoResponder, LlmClient } from './llm/llm-client.ts';
import { ModelHealthMonitor } from './llm/model-health.ts';
import { OpenAiLlmClient } from './llm/openai-llm-client.ts';
import { ProviderSwitch } from './llm/provider-switch.ts';
import type { Logger } from './logger.ts';
import { HandlebarsPromptProvider } from './prompts/handlebars-prompt-provider.ts';
import type { Store } from './store/store.ts';
import { SqlStore } from './store/sql-store.ts';
import { type Hosting, inProcessHosting, type RunHost } from './hosting/run-host.ts';
import type { LogFanOut } from './hosting/log-fan-out.ts';
import type { RunRouter } from './hosting/run-router.ts';
import type { SessionLease } from './hosting/session-lease.ts';
import { Readiness } from './hosting/readiness.ts';
import { RunAdmission } from './hosting/run-admission.ts';
import { RunSlots } from './limits/run-slots.ts';
import { TOKENS } from './tokens.ts';
import { calculatorTool } from './tools/calculator-tool.ts';
import { createCurrentTimeTool } from './tools/current-time-tool.ts';
import type { Tool } from './tools/tool.ts';
import { ToolRegistry } from './tools/tool-registry.ts';
import { createFileTools } from './tools/file-tools.ts';
import { createNotepadTool } from './tools/notepad-tool.ts';
import { SessionFiles } from './files/session-files.ts';
import { McpManager } from './mcp/mcp-manager.ts';
import { clusterNotices, ONE_INSTANCE, type SettingsNotices } from './settings/settings-notices.ts';
import { SettingsService } from './settings/settings-service.ts';

/**
 * Every registration, in one place. `configure` runs last, so tests can replace any of them
 * (a later registration of a token wins).
 */
export function buildContainer(
  config: Config,
  logger: Logger,
  store: Store,
  configure?: (container: DependencyContainer) => void,
  options: { tracing?: RunTracing | undefined } = {},
): DependencyContainer {
  const container = rootContainer.createChildContainer();
  container.register(TOKENS.Config, { useValue: config });
  container.register(TOKENS.Logger, { useValue: logger });
  // The adapter of the provider in force: settings changed in the app may turn the demo model into a real one.
  container.register<LlmClient>(TOKENS.ModelAdapter, {
    useFactory: instanceCachingFactory(
      (dependencies) =>
        new ProviderSwitch(config, {
          demo: () => new DemoLlmClient(config, dependencies.resolve<ReadonlyMap<string, DemoResponder>>(TOKENS.DemoResponders)),
          real: () => new OpenAiLlmClient(config, logger),
        }),
    ),
  });
  container.registerSingleton(ModelHealthMonitor);
  // Prometheus metrics: every logged event and every model call pass through them. A tool call's
  // label is its tool's name only for a tool this server has: a name the model made up is `other`.
  const metrics = new Metrics((name) => container.resolve(ToolRegistry).label(name));
  container.register(Metrics, { useValue: metrics });
  const { tracing } = options;
  container.register<CallerTraces>(TOKENS.CallerTraces, { useValue: tracing ?? NO_CALLER_TRACES });
  const traced = (llm: LlmClient) => (tracing ? tracing.trackModel(llm) : llm);
  const notifier = new Notifier(store, config, logger);
  container.register(Notifier, { useValue: notifier });
  const observers: EventObserver[] = [metrics.observe, ...(tracing ? [tracing.observe.bind(tracing)] : []), notifier.observe];
  container.register<EventObserver>(TOKENS.EventObserver, {
    useValue: (event, sessionId) => {
      for (const observe of observers) observe(event, sessionId);
    },
  });
  // The app's model client: the adapter, with every call's outcome feeding the model's health.
  container.register<LlmClient>(TOKENS.LlmClient, {
    useFactory: instanceCachingFactory((dependencies) =>
      traced(dependencies.resolve(Metrics).trackModel(dependencies.resolve(ModelHealthMonitor).track(dependencies.resolve<LlmClient>(TOKENS.ModelAdapter)))),
    ),
  });
  container.registerSingleton(TOKENS.PromptProvider, HandlebarsPromptProvider);
  container.register(TOKENS.Store, { useValue: store });
  container.register(SessionFiles, {
    useFactory: instanceCachingFactory((dependencies) => {
      const files = new SessionFiles(dependencies.resolve<Config>(TOKENS.Config));
      // Files a strategy reads back (research's state document) are checked at every write, as the strategy says.
      for (const strategy of dependencies.resolve<AnyStrategy[]>(TOKENS.Strategies)) {
        for (const [name, check] of Object.entries(strategy.session?.fileChecks ?? {})) files.validateWrites(name, check);
      }
      return files;
    }),
  });
  container.register<Tool[]>(TOKENS.BuiltinTools, {
    useFactory: (dependencies) => [
      calculatorTool as Tool,
      createCurrentTimeTool() as Tool,
      ...createFileTools(dependencies.resolve(SessionFiles), { readCapBytes: Math.max(1_000, config.tools.resultMaxChars - 500) }),
      createNotepadTool(dependencies.resolve(SessionFiles)) as Tool,
    ],
  });
  container.register<AnyStrategy[]>(TOKENS.Strategies, { useValue: [...STRATEGIES] });
  // The demo model answers each strategy's calls with that strategy's own responder.
  container.register<ReadonlyMap<string, DemoResponder>>(TOKENS.DemoResponders, {
    useFactory: (dependencies) => new Map(dependencies.resolve<AnyStrategy[]>(TOKENS.Strategies).map((strategy) => [strategy.name, strategy.demo])),
  });
  container.registerSingleton(RunKernel);
  // Several instances: commands travel through the cluster to the instance that runs the run.
  const cluster = config.cluster ? new Cluster(config.cluster, logger) : undefined;
  // Where sessions' runs live: this process, or the cluster of instances.
  const sessionsHosting = cluster ? cluster.hosting : inProcessHosting();
  // A run's writes carry the lease they are made under: an instance that lost it cannot overwrite another's run.
  if (cluster && store instanceof SqlStore) store.fenceWith(cluster.lease.fence);
  container.register<ControlBus>(TOKENS.ControlBus, { useValue: sessionsHosting.controlBus });
  container.register<SettingsNotices>(TOKENS.SettingsNotices, { useValue: cluster ? clusterNotices(cluster.messages) : ONE_INSTANCE });
  container.registerSingleton(SettingsService);
  // Runs journal into the store: each effect committed before the run goes on.
  const storeJournal: RunJournal = {
    read: (runId) => store.readJournal(runId),
    append: (runId, entry) => store.appendJournal(runId, entry),
    truncate: (runId, fromPosition) => store.truncateJournal(runId, fromPosition),
    // One group commit holds a model call's entry and the events that show it.
    commitsWithEvents: true,
  };
  container.register<RunJournal>(TOKENS.RunJournal, { useValue: storeJournal });
  // Where runs execute: here, or as Restate workflows that journal in Restate (and keep a copy in
  // the store). With Restate, runs live in their workflows: its run host says how they arrive here.
  const restateEngine = instanceCachingFactory((dependencies) => {
    const inactivityMs = Math.max(config.agent.runTimeoutMs, config.agent.inputTimeoutMs) + 60_000;
    return new RestateEngine(config.restate!, dependencies.resolve(RunKernel), storeJournal, logger, { inactivityMs });
  });
  container.register<RunEngine>(TOKENS.RunEngine, {
    useFactory: instanceCachingFactory((dependencies) => (config.restate ? restateEngine(dependencies) : new InProcessEngine(dependencies.resolve(RunKernel)))),
  });
  container.register<Hosting>(TOKENS.Hosting, {
    useFactory: instanceCachingFactory((dependencies) => (config.restate ? restateHosting(sessionsHosting, restateEngine(dependencies)) : sessionsHosting)),
  });
  const port = <K extends keyof Hosting>(key: K) => instanceCachingFactory((dependencies) => dependencies.resolve<Hosting>(TOKENS.Hosting)[key]);
  container.register<RunHost>(TOKENS.RunHost, { useFactory: port('host') });
  container.register<SessionLease>(TOKENS.SessionLease, { useFactory: port('lease') });
  container.register<RunRouter>(TOKENS.RunRouter, { useFactory: port('router') });
  container.register<LogFanOut>(TOKENS.LogFanOut, { useFactory: port('fanOut') });
  // The server's run slots, shared by every session; whether a run may start is decided in one place.
  container.register(RunSlots, { useValue: new RunSlots(config.limits.concurrentRuns, config.limits.runsPerAddress, config.quotas.runsPerUser) });
  container.register(RunAdmission, {
    useFactory: instanceCachingFactory(
      // Several instances write a session's log in turn: the one that takes its lease catches up first.
      (dependencies) =>
        new RunAdmission(dependencies.resolve<SessionLease>(TOKENS.SessionLease), dependencies.resolve(RunSlots), { catchUp: sessionsHosting.shared }),
    ),
  });
  container.registerSingleton(ToolRegistry);
  container.registerSingleton(McpManager);
  container.registerSingleton(SessionManager);
  container.registerSingleton(ConnectionHandler);
  container.registerSingleton(HistoryService);
  // Whether this process takes new work (the readiness probe); shutdown turns it off first.
  container.register(Readiness, { useValue: new Readiness() });
  configure?.(container);
  return container;
}
