import { setTimeout as delay } from 'node:timers/promises';
import { configFromEnv, type RunningServer, startServer } from './app.ts';
import { parseCommand } from './cli.ts';
import type { Config } from './config/config.ts';
import { StepwiseError } from './errors.ts';

async function main(): Promise<void> {
  const command = parseCommand(process.argv.slice(2));
  switch (command.kind) {
    case 'print':
      process.stdout.write(command.text);
      return;
    case 'usage_error':
      console.error(`stepwise: ${command.message}`);
      process.exit(2);
      return;
    case 'serve':
      break;
    default: {
      const unknown: never = command;
      throw new Error(`Unknown command ${JSON.stringify(unknown)}`);
    }
  }
  let config: Config;
  try {
    config = configFromEnv(process.env);
  } catch (error) {
    if (error instanceof StepwiseError) {
      console.error(`stepwise: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  let server: RunningServer;
  try {
    server = await startServer({ config });
  } catch (error) {
    console.error(`stepwise: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  const { app, url } = server;
  const model =
    config.llm.provider === 'demo'
      ? 'the offline demo model'
      : `${config.llm.model} at ${config.llm.azure?.endpoint ?? config.llm.baseUrl ?? 'api.openai.com'}`;
  app.log.info(`Stepwise is ready at ${url} (model: ${model})`);
  // A shutdown first drains: the readiness probe fails at once and the server goes on serving for
  // SHUTDOWN_DRAIN_MS (a second signal cuts that short), then its runs are handed over or stopped,
  // still serving (the liveness probe stays 200); then everything closes and the process exits.
  let stopping = false;
  let secondSignal: () => void = () => {};
  const signalledAgain = new Promise<void>((resolve) => {
    secondSignal = resolve;
  });
  const shutdown = async (signal: string) => {
    if (stopping) {
      secondSignal();
      return;
    }
    stopping = true;
    app.log.info({ signal, drainMs: config.shutdownDrainMs }, 'shutting down: not ready any more');
    const drained = config.shutdownDrainMs > 0 ? Promise.race([signalledAgain, delay(config.shutdownDrainMs)]) : undefined;
    // SHUTDOWN_TIMEOUT_MS bounds handing over and closing, after the drain time.
    setTimeout(() => process.exit(1), config.shutdownDrainMs + config.shutdownTimeoutMs).unref();
    try {
      await server.drain(drained);
      await app.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void main();
