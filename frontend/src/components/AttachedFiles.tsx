import { PaperclipIcon } from './Icons.tsx';

/** Images a vision model is shown; other files the agent reads with read_file. */
const IMAGE = /\.(png|jpe?g|webp|gif)$/i;

export interface AttachedFilesProps {
  names: string[];
  onDetach: (name: string) => void;
}

/** The files that go with the next message, above the message box, each with a button that takes it off. */
export function AttachedFiles({ names, onDetach }: AttachedFilesProps) {
  return (
    <ul className="attached-files" aria-label="Attached, not yet sent">
      {names.map((name) => (
        <li key={name} className="attached-file" title={IMAGE.test(name) ? 'The model is shown this image with your message' : 'The agent can read this file'}>
          <PaperclipIcon />
          <span className="attached-name">{name}</span>
          <span className="attached-kind">{IMAGE.test(name) ? 'image' : /\.pdf$/i.test(name) ? 'PDF' : 'file'}</span>
          <button
            type="button"
            className="ghost attached-remove"
            aria-label={`Detach ${name}`}
            title="Detach: it stays in the chat’s files"
            onClick={() => onDetach(name)}
          >
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}
