import { createContext, useContext } from 'react';

/** What components deep in a run need of the session's files: download one, or fetch it for a preview. */
export interface SessionFilesApi {
  download(name: string): void;
  /** The file's bytes as a blob, through the API (with the token when one is set). */
  fetchBlob(name: string): Promise<Blob>;
}

export const SessionFilesContext = createContext<SessionFilesApi | undefined>(undefined);

export function useSessionFiles(): SessionFilesApi | undefined {
  return useContext(SessionFilesContext);
}
