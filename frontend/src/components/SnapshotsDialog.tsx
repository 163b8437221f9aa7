import type { SnapshotInfo } from '@stepwise/shared-types';
import { useEffect, useId, useRef, useState } from 'react';
import { api } from '../lib/api.ts';
import { formatClock, formatFull } from '../lib/time.ts';
import { ConfirmButton } from './ConfirmButton.tsx';

const KIND_LABEL: Record<SnapshotInfo['kind'], string> = { manual: 'snapshot', rollback: 'before a rollback', step: 'step' };

/**
 * The session's snapshots and restore points (the end of every step): save one with a label, roll
 * back to one (the conversation from there is folded), or resume its run from it.
 */
export function SnapshotsDialog({
  sessionId,
  busy,
  refreshKey,
  now,
  onSave,
  onRollback,
  onResume,
  onClose,
}: {
  sessionId: string;
  busy: boolean;
  /** Changes whenever the session's log grows, so the list follows. */
  refreshKey: number;
  now: Date;
  onSave: (label: string) => void;
  onRollback: (snapshotId: string) => void;
  onResume: (snapshotId: string) => void;
  onClose: () => void;
}) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [snapshots, setSnapshots] = useState<SnapshotInfo[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [label, setLabel] = useState('');

  useEffect(() => {
    const dialog = dialogRef.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: refreshKey is the trigger: the chat's log moved on, its snapshots may have too
  useEffect(() => {
    let current = true;
    api.snapshots(sessionId).then(
      (list) => {
        if (!current) return;
        setSnapshots(list);
        setError(undefined);
      },
      (failure: unknown) => current && setError(failure instanceof Error ? failure.message : 'Could not load the snapshots'),
    );
    return () => {
      current = false;
    };
  }, [sessionId, refreshKey]);

  return (
    <dialog
      ref={dialogRef}
      className="settings-dialog snapshots-dialog"
      aria-labelledby={titleId}
      data-testid="snapshots"
      onClose={onClose}
      onClick={(event) => {
        if (event.target === event.currentTarget) event.currentTarget.close();
      }}
    >
      <div className="settings-head">
        <h2 id={titleId}>Snapshots</h2>
        <button type="button" className="ghost settings-close" onClick={() => dialogRef.current?.close()}>
          Close
        </button>
      </div>
      <form
        className="snapshot-save"
        onSubmit={(event) => {
          event.preventDefault();
          onSave(label.trim());
          setLabel('');
        }}
      >
        <input aria-label="Snapshot label" placeholder="Label (optional)" maxLength={200} value={label} onChange={(event) => setLabel(event.target.value)} />
        <button type="submit" disabled={busy} title={busy ? 'Wait until the agent has finished' : 'Keep a copy of the conversation as it is now'}>
          Save snapshot
        </button>
      </form>
      {busy && <p className="muted">Rollback and resume wait until the agent has finished.</p>}
      {error && <p className="failure">{error}</p>}
      {snapshots === undefined ? (
        <p className="muted">Loading…</p>
      ) : snapshots.length === 0 ? (
        <p className="muted">No snapshots yet. Every finished step of an agent run becomes a restore point.</p>
      ) : (
        <ul className="snapshot-list" aria-label="Snapshots and restore points">
          {[...snapshots].reverse().map((snapshot) => (
            <li key={snapshot.snapshot_id} data-testid="snapshot" data-kind={snapshot.kind}>
              <span className="snapshot-label">{snapshot.label}</span> <span className="badge">{KIND_LABEL[snapshot.kind]}</span>{' '}
              <time dateTime={snapshot.created_at} title={formatFull(snapshot.created_at)} className="muted">
                {formatClock(snapshot.created_at, now)}
              </time>
              <span className="snapshot-actions">
                <ConfirmButton
                  label="Roll back"
                  question="Roll the chat back to this snapshot? What came after is folded."
                  confirm="Yes, roll back"
                  disabled={busy}
                  onConfirm={() => onRollback(snapshot.snapshot_id)}
                />
                {snapshot.run_id && (
                  <button type="button" className="ghost" disabled={busy} onClick={() => onResume(snapshot.snapshot_id)}>
                    Resume
                  </button>
                )}
              </span>
            </li>
          ))}
        </ul>
      )}
    </dialog>
  );
}
