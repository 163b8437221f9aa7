/** One file of a session, as listed. */
export interface SessionFileInfo {
  name: string;
  size: number;
  /** ISO-8601. */
  modified: string;
}

/** Who put a file there: the user (upload), the agent (a tool), or an MCP server (a result it returned). */
export type FileSource = 'user' | 'agent' | (string & {});

/** Told whenever a file is saved or removed, so the session's log (and its clients) hear of it. */
export type FileListener = (change: {
  sessionId: string;
  runId?: string | undefined;
  kind: 'saved' | 'deleted';
  file: SessionFileInfo;
  source: FileSource;
}) => void | Promise<void>;

/** Who writes a file, and the signal that cancels the write (a stopped run's). */
export interface WriteOptions {
  source: FileSource;
  runId?: string | undefined;
  signal?: AbortSignal | undefined;
}

/** What one read_file call returns. */
export interface TextSlice {
  text: string;
  /** Byte offsets of the slice, and the file's size in bytes. */
  start: number;
  end: number;
  size: number;
  /** The whole file's lines (a last line without a newline counts). */
  lines: number;
}
