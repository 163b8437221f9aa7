export function restateServerPath(): string;
export function waitForRestate(adminUrl: string, timeoutMs?: number): Promise<void>;
export function startTestRestate(): Promise<{ ingressUrl: string; adminUrl: string; stop: () => Promise<void>; stopNow: () => void }>;
