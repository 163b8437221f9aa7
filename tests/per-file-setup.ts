import { afterAll } from 'vitest';
import { closeSharedTestStore } from './helpers/stepwise.ts';

// Runs before each test file (a setup file): after the file's own hooks, the in-memory database its
// servers shared is closed, so that the next file in the same worker starts with an empty one.
afterAll(closeSharedTestStore);
