export const REDIS_SERVER: string;
export function ensureRedis(): Promise<void>;
export function waitForRedis(port: number, timeoutMs?: number): Promise<void>;
export function startTestRedis(): Promise<{ url: string; stop: () => Promise<void>; stopNow: () => void }>;
