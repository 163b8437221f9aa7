/** backend/dist/main.js: the file `pnpm start` runs (the compiled server is server.js beside it). */
export const serverBundle: string;
/** Compiles the server into server.js beside `outfile` and writes `outfile` (default: serverBundle), the file to run; resolves with its path. */
export function buildServer(outfile?: string): Promise<string>;
