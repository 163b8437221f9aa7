/** A passing message with an Undo button, and a bar that shows the time left to use it. */
export function UndoToast({ message, durationMs, onUndo }: { message: string; durationMs: number; onUndo: () => void }) {
  return (
    <div className="toast" role="status" data-testid="undo-toast">
      <span className="toast-message">{message}</span>
      <button type="button" className="toast-action" onClick={onUndo}>
        Undo
      </button>
      <span className="toast-timer" aria-hidden="true" style={{ animationDuration: `${durationMs}ms` }} />
    </div>
  );
}
