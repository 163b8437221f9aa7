import { useEffect, useState } from 'react';
import { useSessionFiles } from '../lib/session-files-context.ts';
import { DownloadIcon } from './Icons.tsx';

const REFERENCE = /saved as session file "([^"]+)"/g;
const IMAGE = /\.(png|jpe?g|gif|webp|svg)$/i;

/** The session files a tool result refers to (an MCP server's image, say): a preview for images, a download for all. */
export function SavedFileReferences({ result }: { result: string }) {
  const names = [...new Set([...result.matchAll(REFERENCE)].map((match) => match[1]!))];
  if (names.length === 0) return null;
  return (
    <div className="saved-files">
      {names.map((name) => (
        <SavedFile key={name} name={name} />
      ))}
    </div>
  );
}

function SavedFile({ name }: { name: string }) {
  const files = useSessionFiles();
  const [preview, setPreview] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (!files || !IMAGE.test(name)) return;
    let url: string | undefined;
    let cancelled = false;
    files
      .fetchBlob(name)
      .then((blob) => {
        if (cancelled) return;
        // An <img> never runs scripts, so even an SVG is safe to show this way.
        url = URL.createObjectURL(blob.type ? blob : new Blob([blob], { type: name.endsWith('.svg') ? 'image/svg+xml' : 'image/*' }));
        setPreview(url);
      })
      .catch(() => undefined);
    return () => {
      cancelled = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [files, name]);
  return (
    <figure className="saved-file">
      {preview && <img src={preview} alt={name} />}
      <figcaption>
        <button type="button" className="file-chip" onClick={() => files?.download(name)} aria-label={`Download ${name}`}>
          <DownloadIcon />
          <span className="file-name">{name}</span>
        </button>
      </figcaption>
    </figure>
  );
}
