import { configFromEnv, type RunningServer, startServer } from './app.ts';
import type { Config } from './config/config.ts';
import { StepwiseError } from './errors.ts';

async function main(): Promise<void> {
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
  if (config.auth.mode === 'none' && !/^(127\.|localhost$|::1$|\[::1\]$)/.test(config.host)) {
    app.log.warn(
      `Listening on ${config.host} without sign-in (AUTH_MODE=none): only this machine is let in. Set AUTH_TOKEN, or AUTH_MODE=oidc or header, to let others in.`,
    );
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs).unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

void main();
