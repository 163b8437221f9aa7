import { z } from 'zod';
import type { McpServerConfig } from '../config-file.ts';
import { integer, section } from '../env-values.ts';

/** What a run works with: tool calls, a chat's files and images, MCP servers. */
export const toolsSection = section(
  z.object({
    TOOL_RESULT_MAX_CHARS: integer(100).default(16_000),
    TOOL_TIMEOUT_MS: integer(1).default(60_000),
    FILE_MAX_BYTES: integer(1).default(10 * 1024 * 1024),
    SESSION_FILES_MAX: integer(1).default(500),
    PDF_MAX_PAGES: integer(1).default(1_000),
    IMAGE_MAX_PER_MESSAGE: integer(1).default(4),
    IMAGE_MAX_SIDE: integer(64).default(2_048),
    IMAGE_MAX_PIXELS: integer(1).default(40_000_000),
    MCP_STARTUP_WAIT_MS: integer(0).default(15_000),
    MCP_RETRY_BASE_MS: integer(1).default(1_000),
    MCP_RETRY_MAX_MS: integer(1).default(60_000),
  }),
  (env) => {
    // The config file's servers (config-file.ts) are read after the environment and put in here.
    const servers: Record<string, McpServerConfig> = {};
    return {
      tools: { resultMaxChars: env.TOOL_RESULT_MAX_CHARS, timeoutMs: env.TOOL_TIMEOUT_MS },
      /** Session files: the largest upload or written file, and how many files one session may hold. */
      files: { maxBytes: env.FILE_MAX_BYTES, maxPerSession: env.SESSION_FILES_MAX, pdfMaxPages: env.PDF_MAX_PAGES },
      /**
       * Images sent to a vision model: at most `maxPerMessage` a message; a side longer than `maxSide`
       * pixels is scaled down on the server before it is sent; an image of more than `maxPixels` is
       * refused at upload (it is not decoded).
       */
      images: { maxPerMessage: env.IMAGE_MAX_PER_MESSAGE, maxSide: env.IMAGE_MAX_SIDE, maxPixels: env.IMAGE_MAX_PIXELS },
      /** MCP servers from the config file, and how patiently they are (re)connected. */
      mcp: {
        servers,
        /** How long startup waits for the servers before listening anyway (they keep connecting). */
        startupWaitMs: env.MCP_STARTUP_WAIT_MS,
        retryBaseMs: env.MCP_RETRY_BASE_MS,
        retryMaxMs: Math.max(env.MCP_RETRY_MAX_MS, env.MCP_RETRY_BASE_MS),
      },
    };
  },
);
