/** backend/dist/main.js: where `pnpm start` compiles the server to. */
export const serverBundle: string;
/** Compiles the server into one file (default: serverBundle); resolves with its path. */
export function buildServer(outfile?: string): Promise<string>;
