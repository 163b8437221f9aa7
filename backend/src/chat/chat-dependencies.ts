import type { ControlBus } from '../agent/kernel/control-bus.ts';
import type { RunEngine } from '../agent/kernel/run-engine.ts';
import type { RunKernel } from '../agent/kernel/run-kernel.ts';
import type { Config } from '../config/config.ts';
import type { SessionFiles } from '../files/session-files.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/store.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';
import type { RunRouter } from '../hosting/run-router.ts';
import type { RunAdmission } from '../hosting/run-admission.ts';

/** The services every session shares. */
export interface ChatDependencies {
  config: Config;
  kernel: RunKernel;
  /** Where runs execute: here, or as Restate workflows. */
  engine: RunEngine;
  controlBus: ControlBus;
  tools: ToolRegistry;
  store: Store;
  logger: Logger;
  /** Whether a run may start (its slot, its user's quota, its session's lease), for every session. */
  admission: RunAdmission;
  files: SessionFiles;
  /** How a command reaches the session's run wherever it executes (this process, another instance, a workflow). */
  router: RunRouter;
}
