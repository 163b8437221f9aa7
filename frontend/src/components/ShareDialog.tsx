import type { ShareInfo } from '@stepwise/shared-types';
import { useEffect, useId, useRef, useState } from 'react';
import { api } from '../lib/api.ts';
import { formatFull, formatWhen } from '../lib/time.ts';
import { CopyButton } from './CopyButton.tsx';

/** How long a new link lasts, as the dialog offers it (hours; undefined: until revoked). */
const EXPIRY_CHOICES: { label: string; hours: number | undefined }[] = [
  { label: 'Until revoked', hours: undefined },
  { label: '1 day', hours: 24 },
  { label: '7 days', hours: 24 * 7 },
  { label: '30 days', hours: 24 * 30 },
];

/**
 * Export and share a chat: download it as Markdown or JSON; make a read-only link to it as it
 * stands (with an expiry, with or without its files), copy a new link, revoke any link.
 * `canShare`: only the chat's owner makes and revokes links (an admin watching may export).
 */
export function ShareDialog({ sessionId, canShare, now, onClose }: { sessionId: string; canShare: boolean; now: Date; onClose: () => void }) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [shares, setShares] = useState<ShareInfo[] | undefined>();
  const [created, setCreated] = useState<ShareInfo | undefined>();
  const [expiry, setExpiry] = useState(0);
  const [includeFiles, setIncludeFiles] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [working, setWorking] = useState(false);

  useEffect(() => {
    const dialog = dialogRef.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  const load = () => {
    if (!canShare) return;
    api.shares(sessionId).then(setShares, (failure: Error) => setError(failure.message));
  };
  useEffect(load, [sessionId, canShare]);

  const run = (task: () => Promise<unknown>) => {
    setWorking(true);
    task()
      .then(
        () => setError(undefined),
        (failure: Error) => setError(failure.message),
      )
      .finally(() => setWorking(false));
  };
  const linkOf = (share: ShareInfo) => new URL(share.url ?? '/', window.location.origin).toString();

  return (
    <dialog
      ref={dialogRef}
      className="settings-dialog share-dialog"
      aria-labelledby={titleId}
      data-testid="share-dialog"
      onClose={onClose}
      onClick={(event) => {
        if (event.target === event.currentTarget) event.currentTarget.close();
      }}
    >
      <div className="settings-head">
        <h2 id={titleId}>Export and share</h2>
        <button type="button" className="ghost settings-close" onClick={() => dialogRef.current?.close()}>
          Close
        </button>
      </div>
      <div className="settings-body">
        <section className="share-section">
          <h3>Export</h3>
          <p className="muted">Download the whole chat: every question, step, tool call and answer.</p>
          <div className="share-actions">
            <button type="button" disabled={working} onClick={() => run(() => api.exportChat(sessionId, 'markdown'))}>
              Download Markdown
            </button>
            <button type="button" className="ghost" disabled={working} onClick={() => run(() => api.exportChat(sessionId, 'json'))}>
              Download JSON
            </button>
          </div>
        </section>
        {canShare && (
          <section className="share-section">
            <h3>Read-only link</h3>
            <p className="muted">Anyone with the link sees this chat as it stands now (steps, tools, answers), and nothing else. They cannot write in it.</p>
            <form
              className="share-form"
              onSubmit={(event) => {
                event.preventDefault();
                const hours = EXPIRY_CHOICES[expiry]?.hours;
                run(async () => {
                  const share = await api.createShare(sessionId, { include_files: includeFiles, ...(hours === undefined ? {} : { expires_in_hours: hours }) });
                  setCreated(share);
                  load();
                });
              }}
            >
              <label>
                Expires{' '}
                <select value={expiry} onChange={(event) => setExpiry(Number(event.target.value))}>
                  {EXPIRY_CHOICES.map((choice, index) => (
                    <option key={choice.label} value={index}>
                      {choice.label}
                    </option>
                  ))}
                </select>
              </label>
              <label className="share-files">
                <input type="checkbox" checked={includeFiles} onChange={(event) => setIncludeFiles(event.target.checked)} /> Include the chat’s files
              </label>
              <button type="submit" disabled={working}>
                Create link
              </button>
            </form>
            {created?.url && (
              <div className="share-created" data-testid="share-link">
                <input readOnly aria-label="The new link" value={linkOf(created)} onFocus={(event) => event.currentTarget.select()} />
                <CopyButton text={linkOf(created)} label="Copy the link" />
                <p className="muted">Copy it now: the link is shown only once.</p>
              </div>
            )}
            {shares && shares.length > 0 && (
              <ul className="share-list" aria-label="Links to this chat">
                {[...shares].reverse().map((share) => (
                  <li key={share.id} data-testid="share">
                    <span>
                      Made{' '}
                      <time dateTime={share.created_at} title={formatFull(share.created_at)}>
                        {formatWhen(share.created_at, now)}
                      </time>
                      {' · '}
                      {share.expires_at ? (
                        <>
                          expires{' '}
                          <time dateTime={share.expires_at} title={formatFull(share.expires_at)}>
                            {formatFull(share.expires_at)}
                          </time>
                        </>
                      ) : (
                        'until revoked'
                      )}
                      {share.include_files && ' · with files'}
                    </span>
                    <button
                      type="button"
                      className="ghost danger-text"
                      disabled={working}
                      onClick={() =>
                        run(async () => {
                          await api.revokeShare(sessionId, share.id);
                          if (created?.id === share.id) setCreated(undefined);
                          load();
                        })
                      }
                    >
                      Revoke
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </section>
        )}
        {error && <p className="failure">{error}</p>}
      </div>
    </dialog>
  );
}
