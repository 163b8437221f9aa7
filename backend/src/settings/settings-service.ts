import type { SettingsView } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ModelHealthMonitor } from '../llm/model-health.ts';
import type { Logger } from '../logger.ts';
import { McpManager } from '../mcp/mcp-manager.ts';
import type { AppSettingsRecord, Store } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { type AppSettings, applyPatch, SettingsPatch } from './settings-document.ts';
import { SettingsLayers, SettingsLocked } from './settings-layers.ts';
import type { SettingsNotices } from './settings-notices.ts';
import { changedSettings, settingsView } from './settings-view.ts';

/** How many changes `GET /api/settings` lists. */
const CHANGES_SHOWN = 20;
/** With several instances, how often each reads the settings' version from the store, in case a notice was lost. */
const POLL_MS = 15_000;
/** How many times a change is tried again when another change was stored first. */
const ATTEMPTS = 5;

/** Who changes the settings, as the change's record names them. */
export interface SettingsAuthor {
  id: string;
  name: string;
}

/**
 * The settings admins change in the app: checked, stored (with who changed what), and applied
 * without a restart on every instance. Applying one puts the layered values into the Config every
 * module reads (the next run takes the model, the approval rules and the limits from there),
 * connects and disconnects MCP servers, and checks a changed model endpoint.
 */
@injectable()
export class SettingsService {
  private readonly layers: SettingsLayers;
  private inForce: { version: number; settings: AppSettings } = { version: 0, settings: {} };
  /** Applies happen one at a time, in the order they come. */
  private applying: Promise<void> = Promise.resolve();
  private readonly cleanups: Array<() => void> = [];
  private readonly listeners = new Set<() => void>();
  private loaded = false;

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(McpManager) private readonly mcp: McpManager,
    @inject(ModelHealthMonitor) private readonly health: ModelHealthMonitor,
    @inject(TOKENS.SettingsNotices) private readonly notices: SettingsNotices,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    this.layers = new SettingsLayers(config);
  }

  /** At startup, before the MCP servers start: the stored settings take effect. */
  async load(): Promise<void> {
    await this.adopt(await this.store.readAppSettings());
  }

  /** Once the instances have met: a change another instance announces (or that polling finds) takes effect here. */
  async follow(): Promise<void> {
    if (!this.notices.shared) return;
    this.cleanups.push(await this.notices.listen((version) => version > this.inForce.version && void this.reload()));
    const timer = setInterval(() => void this.reload(), POLL_MS);
    timer.unref();
    this.cleanups.push(() => clearInterval(timer));
  }

  close(): void {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  /** Told after each change takes effect here. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The settings in force here, each with its source, and the latest changes. */
  async view(): Promise<SettingsView> {
    const changes = await this.store.listSettingsChanges(CHANGES_SHOWN);
    return settingsView(this.config, this.layers, this.inForce.settings, { version: this.inForce.version, mcp: this.mcp.status(), changes });
  }

  /**
   * Checks a change, stores it with its record and applies it here, then tells the other
   * instances. Throws SettingsLocked (a setting the environment or the config file pins) or
   * SettingsIssues (the settings would not fit together); nothing changes then.
   */
  async change(patch: SettingsPatch, author: SettingsAuthor): Promise<SettingsView> {
    const locked = this.layers.lockedIn(patch);
    if (locked.length) throw new SettingsLocked(locked);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const current = await this.store.readAppSettings();
      const before = readStored(current.settings);
      const after = applyPatch(before, patch);
      this.layers.resolve(after);
      const changes = changedSettings(before, after);
      if (changes.length === 0) {
        await this.adopt(current);
        return this.view();
      }
      const version = current.version + 1;
      if (await this.store.saveAppSettings(version, after, { by: author, changes })) {
        // Names only: values may be secrets.
        this.logger.info({ version, by: author.id, settings: changes.map((change) => change.setting) }, 'settings changed in the app');
        await this.adopt({ version, settings: after });
        this.notices.announce(version);
        return this.view();
      }
    }
    throw new Error('The settings kept changing while this change was made; try again');
  }

  /** Reads the store and applies a newer version. */
  private async reload(): Promise<void> {
    try {
      await this.adopt(await this.store.readAppSettings());
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the settings from the store');
    }
  }

  /** Applies a stored version newer than the one in force (the first load applies whatever is stored). */
  private adopt(record: AppSettingsRecord): Promise<void> {
    const next = this.applying.then(async () => {
      if (this.loaded && record.version <= this.inForce.version) return;
      this.loaded = true;
      const settings = readStored(record.settings);
      let effective: ReturnType<SettingsLayers['resolve']>;
      try {
        effective = this.layers.resolve(settings);
      } catch (error) {
        // The config file may have changed under them (an endpoint a route names is gone): the rest holds.
        this.logger.error(
          { version: record.version, problem: (error as Error).message },
          'the app settings do not fit the environment and config file; they are ignored',
        );
        effective = this.layers.resolve({});
      }
      const endpointBefore = JSON.stringify([this.config.llm.provider, this.config.llm.baseUrl, this.config.llm.apiKey]);
      this.layers.write(effective);
      this.inForce = { version: record.version, settings };
      await this.mcp.reconcile(effective.mcpServers);
      if (JSON.stringify([this.config.llm.provider, this.config.llm.baseUrl, this.config.llm.apiKey]) !== endpointBefore) {
        void this.health.recheck().catch((error: unknown) => this.logger.warn({ err: error }, 'model health check failed'));
      }
      for (const listener of this.listeners) listener();
    });
    this.applying = next.catch(() => undefined);
    return next;
  }
}

/** The stored document as settings; one that no longer parses (written by a later release) counts as none. */
function readStored(value: unknown): AppSettings {
  const parsed = SettingsPatch.safeParse(value);
  return parsed.success ? (JSON.parse(JSON.stringify(parsed.data)) as AppSettings) : {};
}
