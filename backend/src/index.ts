import 'reflect-metadata';
export { configFromEnv, REPOSITORY_PATHS, type RunningServer, startServer } from './app.ts';
export { AgentControl, textAnswer } from './agent/kernel/agent-control.ts';
export { RunKernel, type RunOutcome, type RunSession } from './agent/kernel/run-kernel.ts';
export { JOURNAL, type JournalEntry, JournalReplay, type RunJournal, type RunPast } from './agent/kernel/run-journal.ts';
export { type ControlBus, type ControlCommand, type ControlOutcome, InProcessControlBus } from './agent/kernel/control-bus.ts';
export { runEvents, type RunEvents } from './agent/kernel/run-events.ts';
export { runPhase } from './agent/common/phase.ts';
export { STRATEGIES } from './agent/strategies.ts';
export { findChain, findExpression } from './agent/common/demo-language.ts';
export { roa } from './agent/roa/roa.ts';
export { planExecute } from './agent/plan_execute/plan-execute.ts';
export { autonomous, decide, guidanceVariant, PLANNING_LOOP_LIMIT, readMarkers } from './agent/autonomous/autonomous.ts';
export { factFor, partsOf } from './agent/autonomous/autonomous-demo.ts';
export { applyTodoOperation, parseTodos, TODOS_FILE, TodoError, todosFromUser } from './agent/autonomous/todos.ts';
export { ensureAlternation } from './llm/alternation.ts';
export { checkProblem, OrchestratorDecision, solver } from './agent/solver/solver.ts';
export { research } from './agent/research/research.ts';
export {
  checkGraph,
  currentStage,
  fitState,
  GraphError,
  inert,
  nextTaskId,
  parseGraphYaml,
  parseState,
  renderState,
  type ResearchState,
  runnableWave,
  STATE_DOC,
  STATE_DOC_MAX_BYTES,
  STATE_DOC_MAX_TASKS,
} from './agent/research/state-doc.ts';
export { GRAPH_MAX_DEPTH, GRAPH_MAX_LINES, GRAPH_MAX_NODES, renderedNodes } from './agent/research/graph-bounds.ts';
export { type BudgetCheck, type BudgetHold, RunSpending } from './agent/kernel/run-spending.ts';
export { artifactName } from './agent/research/research.ts';
export { MISSING_PREREQUISITE_KEYWORDS } from './agent/plan_execute/plan.ts';
export { chat as plainChat } from './agent/chat/chat.ts';
export { findLastJsonObject, ObserveControl, parseControlBlock, ReasonControl } from './agent/common/control-block.ts';
export type { EventSink } from './agent/kernel/event-sink.ts';
export { type AnyStrategy, defineStrategy, type Run, type RunInput, type RunSuccess, type StrategyDefinition } from './agent/kernel/strategy.ts';
export { parseClientMessage } from './chat/connection-handler.ts';
export { type Config, ENVIRONMENT_VARIABLES, exposureProblem, loadConfig, needsStrictAlternation } from './config/config.ts';
export { ConfigFileDocument, configFileJsonSchema } from './config/config-file-schema.ts';
export { parseCommand, usage, version } from './cli.ts';
export { buildContainer } from './container.ts';
export * from './errors.ts';
export { DemoLlmClient } from './llm/demo-llm-client.ts';
export { askForJson, GRAMMAR_LIMITS, grammarSafe, jsonSchemaOf, parseReply } from './llm/structured-output.ts';
export { OpenAiLlmClient } from './llm/openai-llm-client.ts';
export { ModelHealthMonitor } from './llm/model-health.ts';
export { BUILT_IN_PRICES, costOf, priceOf } from './llm/model-prices.ts';
export { globMatches, modelFor, seesByName } from './llm/model-routes.ts';
export { BodyBuffers, encodeRequest, requestObject, wireArguments } from './llm/request-body.ts';
export { readTokenUsage, tokenCount } from './llm/token-usage.ts';
export type { CompletionRequest, CompletionResult, DemoKit, DemoResponder, LlmClient, OutputSchema } from './llm/llm-client.ts';
export type { LlmMessage, LlmToolCall, TokenUsage } from './messages.ts';
export type { PromptProvider, PromptSamples, PromptSet } from './prompts/prompt-provider.ts';
export type { Logger } from './logger.ts';
export { HandlebarsPromptProvider } from './prompts/handlebars-prompt-provider.ts';
export { MemoryStore } from './store/memory-store.ts';
export type { AgentTaskRecord } from './store/agent-task-store.ts';
export { TOKENS } from './tokens.ts';
export { calculatorTool } from './tools/calculator-tool.ts';
export { createCurrentTimeTool } from './tools/current-time-tool.ts';
export { evaluateExpression, ExpressionError } from './tools/expression.ts';
export type { Tool } from './tools/tool.ts';
export { ToolRegistry } from './tools/tool-registry.ts';
export { PLAIN_CHAT } from './chat/session-runs.ts';
export { SessionManager } from './chat/session-manager.ts';
export { latestHistory, trimToBudget } from './chat/session-runs.ts';
export { migrateSchema, SCHEMA, type SchemaStep, type SqlDialectName } from './store/migrations.ts';
export {
  EMBEDDED_DATABASE_FOLDER,
  migrateEmbeddedData,
  openEmbeddedStore,
  openSqliteStore,
  openSqlStore,
  openStore,
  SQLITE_DATABASE_FILE,
} from './store/open-store.ts';
export type { PgliteImport } from './store/pglite-import.ts';
export { openSqliteDatabase, type SqliteConnection, type SqliteSync } from './store/sqlite-database.ts';
export { PostgresDatabase } from './store/postgres-database.ts';
export type { SqlDatabase } from './store/sql-database.ts';
export { SqlStore } from './store/sql-store.ts';
export type { MessageRecord, RunRecord, SessionRecord, Store } from './store/store.ts';
export { type ConfigFile, loadConfigFile, type McpServerConfig, parseConfigFile } from './config/config-file.ts';
export { SessionFiles } from './files/session-files.ts';
export { createFileTools } from './tools/file-tools.ts';
export { createNotepadTool, NOTEPAD_FILE } from './tools/notepad-tool.ts';
export { McpManager, toolName } from './mcp/mcp-manager.ts';
export { describeToolResult, extensionFor } from './mcp/mcp-results.ts';
export { formQuestion, readFormAnswer } from './mcp/elicitation.ts';
export { example as exampleStrategy } from './agent/example/example.ts';
export { decodeSession, encodeSession, readSession, TrustedProxies, userFromHeaders } from './auth/identify.ts';
export { cleanEmail, cleanName, userFromClaims, userIdProblem } from './auth/identity.ts';
export { chatAccess, LOCAL_USER, type User } from './auth/user.ts';
export { RunSlots } from './limits/run-slots.ts';
export { WorkBudgets } from './limits/work-budgets.ts';
export { decideAccess, isLoopbackAddress } from './transport/access.ts';
export { Cluster } from './cluster/cluster.ts';
export { type Fence, type FenceToken, HIGHLIGHT_END, HIGHLIGHT_START, LOCAL_OWNER, type SearchHit, searchTerms, StaleLeaseError } from './store/store.ts';
export { type Arrival, type ArrivingRun, type Hosting, InProcessRunHost, type Interrupted, inProcessHosting, type RunHost } from './hosting/run-host.ts';
export { InProcessLease, type SessionLease } from './hosting/session-lease.ts';
export { InProcessRouter, type RunRouter } from './hosting/run-router.ts';
export { InProcessFanOut, type LogFanOut, type SessionNotice } from './hosting/log-fan-out.ts';
export { type Admission, RunAdmission } from './hosting/run-admission.ts';
export { RestateEngine } from './restate/restate-engine.ts';
export { RestateRouter, RestateRunHost, restateHosting } from './restate/restate-run-host.ts';
export { applyPatch, type AppSettings, SettingsPatch } from './settings/settings-document.ts';
export { SettingsIssues, SettingsLayers } from './settings/settings-layers.ts';
export { changedSettings } from './settings/settings-view.ts';
