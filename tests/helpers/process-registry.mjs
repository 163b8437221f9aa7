// The processes a test run starts, written down in a folder (one file per process) so that what a
// run leaves behind can be killed afterwards: by the global teardown, by the test command once
// vitest has exited (or crashed, or was interrupted), or by a test worker that is told to stop.
// Plain JavaScript, so that scripts/test.mjs can use it as well as the tests.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The environment variable that names the folder; the test command or the global setup sets it. */
export const REGISTRY_ENV = 'STEPWISE_TEST_PROCESSES';

/** A fresh, empty registry folder. */
export function createRegistry() {
  return mkdtempSync(join(tmpdir(), 'stepwise-test-processes-'));
}

/**
 * When the process with this pid started (clock ticks after boot, from /proc), to tell it apart
 * from a later process that got the same pid. Undefined when there is no such process (or no /proc).
 */
export function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start with the state, field 3;
    // the start time is field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/** Writes the process down; `group` when it leads its own process group (spawned detached). */
export function recordProcess(dir, entry) {
  try {
    writeFileSync(join(dir, String(entry.pid)), JSON.stringify({ ...entry, start: entry.start ?? startTime(entry.pid) }));
  } catch {
    // The folder is gone: the run is ending, and whoever removed it has swept it.
  }
}

export function forgetProcess(dir, pid) {
  rmSync(join(dir, String(pid)), { force: true });
}

/**
 * SIGKILLs a recorded process, with its whole group when it leads one, unless its pid now belongs
 * to a process that started later. When the leader is gone, what is left of its group is still
 * ours: no other process can lead a group with that id while the group exists.
 * Returns true when something was there to kill.
 */
export function killRecorded(entry) {
  const now = startTime(entry.pid);
  if (now !== undefined && entry.start !== undefined && now !== entry.start) return false;
  try {
    process.kill(entry.group ? -entry.pid : entry.pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/** Kills everything recorded in the folder and empties it; returns what was still running. */
export function sweepRegistry(dir) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const killed = [];
  for (const name of names) {
    const file = join(dir, name);
    try {
      const entry = JSON.parse(readFileSync(file, 'utf8'));
      if (killRecorded(entry)) killed.push(`${entry.pid} ${entry.description ?? ''}`.trim());
    } catch {
      // A half-written record: its process is recorded again or already gone.
    }
    rmSync(file, { force: true });
  }
  return killed;
}

/** Sweeps the folder (and removes it with `remove`), and says on stderr what had been left running. */
export function sweepAndReport(dir, who, options = {}) {
  const killed = sweepRegistry(dir);
  if (options.remove) rmSync(dir, { recursive: true, force: true });
  if (killed.length > 0) {
    process.stderr.write(`${who}: killed ${killed.length} process(es) the tests left running:\n${killed.map((line) => `  ${line}`).join('\n')}\n`);
  }
  return killed;
}
