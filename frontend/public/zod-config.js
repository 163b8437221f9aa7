// Loaded before the app (a classic script runs before module scripts). zod compiles object
// schemas with `new Function` when it may, and finds out by trying once as the schemas are
// defined; the server's Content-Security-Policy allows no eval, so that try would be reported as a
// violation. With `jitless` zod parses the same way, interpreted, and never tries.
globalThis.__zod_globalConfig = { ...globalThis.__zod_globalConfig, jitless: true };
