import { formatSize } from '@stepwise/shared-types';
import { ToolExecutionError } from '../errors.ts';

/** One content block of an MCP tool result, loosely typed: servers send more than the spec lists. */
type ContentBlock = { type: string; [key: string]: unknown };

/** Saves binary content as a session file; returns the name it got. */
export type SaveBlob = (bytes: Buffer, mimeType: string, kind: string) => Promise<string>;

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/svg+xml': 'svg',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'application/pdf': 'pdf',
  'application/json': 'json',
  'application/gzip': 'gz',
  'application/zip': 'zip',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'text/markdown': 'md',
};

/** A file extension for a MIME type ("bin" when unknown). */
export function extensionFor(mimeType: string | undefined): string {
  return EXTENSIONS[(mimeType ?? '').split(';')[0]!.trim().toLowerCase()] ?? 'bin';
}

/**
 * Turns an MCP tool result into the text the model reads (and the tool card shows). Text stays
 * text; images, audio and binary resources are saved as session files and referred to by name
 * (a model cannot read base64, and the user can open them); embedded text resources are inlined
 * under their URI; resource links are listed. A result flagged `isError` becomes a tool error.
 */
export async function describeToolResult(result: Record<string, unknown>, saveBlob: SaveBlob): Promise<string> {
  if ('toolResult' in result && !('content' in result)) return JSON.stringify(result.toolResult);
  const blocks = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
  const parts: string[] = [];
  for (const block of blocks) parts.push(await describeBlock(block, saveBlob));
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  const text = parts.join('\n');
  if (result.isError === true) throw new ToolExecutionError(text || 'The tool reported an error without a message');
  return text;
}

async function describeBlock(block: ContentBlock, saveBlob: SaveBlob): Promise<string> {
  switch (block.type) {
    case 'text':
      return String(block.text ?? '');
    case 'image':
    case 'audio': {
      const mimeType = String(block.mimeType ?? 'application/octet-stream');
      return saveReference(block.type, String(block.data ?? ''), mimeType, saveBlob);
    }
    case 'resource': {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      const uri = String(resource.uri ?? '');
      const mimeType = typeof resource.mimeType === 'string' ? resource.mimeType : undefined;
      if (typeof resource.text === 'string') return `[resource ${uri}${mimeType ? ` (${mimeType})` : ''}]\n${resource.text}`;
      if (typeof resource.blob === 'string') {
        return `${await saveReference('resource', resource.blob, mimeType ?? 'application/octet-stream', saveBlob)} from ${uri}`;
      }
      return `[resource ${uri}]`;
    }
    case 'resource_link': {
      const mimeType = typeof block.mimeType === 'string' ? ` (${block.mimeType})` : '';
      const description = typeof block.description === 'string' ? `: ${block.description}` : '';
      return `[resource link ${String(block.name ?? '')} ${String(block.uri ?? '')}${mimeType}${description}]`;
    }
    default:
      return JSON.stringify(block);
  }
}

async function saveReference(kind: string, base64: string, mimeType: string, saveBlob: SaveBlob): Promise<string> {
  const bytes = Buffer.from(base64, 'base64');
  try {
    const name = await saveBlob(bytes, mimeType, kind);
    return `[${kind} ${mimeType}, ${formatSize(bytes.byteLength)}, saved as session file "${name}"]`;
  } catch (error) {
    return `[${kind} ${mimeType}, ${formatSize(bytes.byteLength)}, not saved: ${(error as Error).message}]`;
  }
}
