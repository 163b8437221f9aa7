import './node-compat.ts';
import { defineConfig } from 'vitest/config';
import SlowestFiles from './slowest-files.ts';

export default defineConfig({
  test: {
    include: ['unit/**/*.test.ts', 'contract/**/*.test.ts', 'integration/**/*.test.ts', 'e2e/**/*.test.ts'],
    reporters: ['default', new SlowestFiles()],
    setupFiles: ['./node-compat.ts'],
    // Kills what the tests started and left running (see helpers/process.ts).
    globalSetup: ['./global-setup.ts'],
    // Most files wait on servers, sockets and a browser rather than compute, so four run side by side
    // (vitest's default on two cores is one file at a time).
    maxWorkers: Number(process.env.TEST_WORKERS) || 4,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
