import './node-compat.ts';
import { defineConfig } from 'vitest/config';
import SlowestFiles from './slowest-files.ts';

export default defineConfig({
  test: {
    include: ['unit/**/*.test.ts', 'contract/**/*.test.ts', 'integration/**/*.test.ts', 'e2e/**/*.test.ts'],
    reporters: ['default', new SlowestFiles()],
    setupFiles: ['./node-compat.ts', './per-file-setup.ts'],
    // Kills what the tests started and left running (see helpers/process.ts).
    globalSetup: ['./global-setup.ts'],
    // Most files wait on servers, sockets and a browser rather than compute, so four run side by side
    // (vitest's default on two cores is one file at a time).
    maxWorkers: Number(process.env.TEST_WORKERS) || 4,
    // A worker runs its files one after another in one process, keeping the modules they load (the
    // backend, its packages): loading them anew for every file took about half of a file's CPU time.
    // The files share no state through them (servers, stores and containers are each test's own; the
    // shared in-memory database is closed after each file, see per-file-setup.ts). TEST_ISOLATE=1
    // gives each file a fresh process again.
    isolate: process.env.TEST_ISOLATE === '1',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
