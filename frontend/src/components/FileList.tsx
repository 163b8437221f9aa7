import { formatSize } from '@stepwise/shared-types';
import type { FileView } from '../state/view-state.ts';
import { DownloadIcon, PaperclipIcon } from './Icons.tsx';

export interface FileListProps {
  files: FileView[];
  uploading: string[];
  onDownload: (name: string) => void;
}

const SOURCE_LABEL: Record<string, string> = { user: 'attached', agent: 'written by the agent' };

/** A strategy's working files (research's task results and artifacts): folded away under "Work files". */
export function isWorkFile(name: string): boolean {
  return /^task-[\w.-]+\.json$/.test(name) || name.startsWith('artifact-');
}

/** The session's files: what the user attached and what the agent (or a tool) wrote, each downloadable. */
export function FileList({ files, uploading, onDownload }: FileListProps) {
  if (files.length === 0 && uploading.length === 0) return null;
  const main = files.filter((file) => !isWorkFile(file.name));
  const work = files.filter((file) => isWorkFile(file.name));
  return (
    <section className="file-list" aria-label="Session files">
      <span className="file-list-title">Files</span>
      <ul>
        {main.map((file) => (
          <FileChip key={file.name} file={file} onDownload={onDownload} />
        ))}
        {work.length > 0 && (
          <li className="file work-files">
            <details data-testid="work-files">
              <summary>Work files ({work.length})</summary>
              <ul>
                {work.map((file) => (
                  <FileChip key={file.name} file={file} onDownload={onDownload} />
                ))}
              </ul>
            </details>
          </li>
        )}
        {uploading.map((name, index) => (
          <li key={`uploading-${index}-${name}`} className="file file-uploading" aria-busy="true">
            <span className="spinner" aria-hidden="true" />
            <span className="file-name">{name}</span>
            <span className="file-size">uploading…</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function FileChip({ file, onDownload }: { file: FileView; onDownload: (name: string) => void }) {
  return (
    <li className={`file file-${file.source === 'user' ? 'user' : 'agent'}`}>
      <button
        type="button"
        className="file-chip"
        onClick={() => onDownload(file.name)}
        title={`${SOURCE_LABEL[file.source] ?? `from ${file.source}`} · ${formatSize(file.size)}`}
      >
        {file.source === 'user' ? <PaperclipIcon /> : <DownloadIcon />}
        {/* Its name starts with what it shows (a name that did not would fail label-content-name-mismatch). */}
        <span className="visually-hidden">Download </span>
        <span className="file-name">{file.name}</span> <span className="file-size">{formatSize(file.size)}</span>
      </button>
    </li>
  );
}
