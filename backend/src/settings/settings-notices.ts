/** How instances tell each other that the app settings changed: each then reads them from the store. */
export interface SettingsNotices {
  /** True when other instances share the settings: a change is announced to them, and they read the store now and then too. */
  readonly shared: boolean;
  /** Tells the other instances that the settings are at `version` now. */
  announce(version: number): void;
  /** Calls `listener` with each version announced; resolves with the unsubscribe. */
  listen(listener: (version: number) => void): Promise<() => void>;
}

/** One process: nobody else to tell. */
export const ONE_INSTANCE: SettingsNotices = {
  shared: false,
  announce: () => undefined,
  listen: async () => () => undefined,
};

const CHANNEL = 'settings';

/** Several instances: notices travel on a channel the cluster carries (Redis pub/sub). */
export function clusterNotices(cluster: {
  broadcast(channel: string, message: string): void;
  listen(channel: string, listener: (message: string) => void): Promise<() => void>;
}): SettingsNotices {
  return {
    shared: true,
    announce: (version) => cluster.broadcast(CHANNEL, String(version)),
    listen: (listener) =>
      cluster.listen(CHANNEL, (message) => {
        const version = Number(message);
        if (Number.isSafeInteger(version)) listener(version);
      }),
  };
}
