import type { ChildProcess, SpawnOptions } from 'node:child_process';

export const root: string;
export function run(command: string, args: readonly string[], options?: SpawnOptions): Promise<number>;
export function resolveFrom(workspacePackage: string, specifier: string): string;
export function runNodeBin(workspacePackage: string, packageName: string, binPath: string, args: readonly string[], options?: SpawnOptions): Promise<number>;
export function freePort(): Promise<number>;
export function aptInstall(name: string): Promise<boolean>;
export function groupStopper(child: ChildProcess, dir: string, graceMs: number): { exited: Promise<unknown>; stopNow: () => void; stop: () => Promise<void> };
