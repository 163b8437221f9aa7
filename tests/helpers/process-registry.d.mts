export interface RecordedProcess {
  pid: number;
  /** True when the process leads its own process group (spawned detached): the group is killed. */
  group: boolean;
  /** From /proc: tells the process apart from a later one with the same pid. */
  start?: string | undefined;
  description?: string;
}

export const REGISTRY_ENV: string;
export function createRegistry(): string;
export function startTime(pid: number): string | undefined;
export function recordProcess(dir: string, entry: RecordedProcess): void;
export function forgetProcess(dir: string, pid: number): void;
export function killRecorded(entry: RecordedProcess): boolean;
export function sweepRegistry(dir: string): string[];
export function sweepAndReport(dir: string, who: string, options?: { remove?: boolean }): string[];
