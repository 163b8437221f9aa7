import './node-compat.ts';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['unit/**/*.test.ts', 'contract/**/*.test.ts', 'integration/**/*.test.ts', 'e2e/**/*.test.ts'],
    setupFiles: ['./node-compat.ts'],
    // Kills what the tests started and left running (see helpers/process.ts).
    globalSetup: ['./global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
