import { type KeyboardEvent, useEffect, useId, useRef, useState } from 'react';

/** The other ways to send a message while a run works, beside Steer. */
const CHOICES = [
  { delivery: 'queue', label: 'Queue after this run', hint: 'It starts the next run when this one ends' },
  { delivery: 'interrupt', label: 'Interrupt now', hint: 'It cuts the model call in flight; the run goes on with it at once' },
] as const;

export type MenuDelivery = (typeof CHOICES)[number]['delivery'];

/** A small menu beside Steer: "Queue after this run" and "Interrupt now". */
export function SendMenu({ disabled, onPick }: { disabled: boolean; onPick: (delivery: MenuDelivery) => void }) {
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const wrapper = useRef<HTMLDivElement>(null);
  const toggle = useRef<HTMLButtonElement>(null);

  // Opened, the first choice takes the focus; a click elsewhere closes it.
  useEffect(() => {
    if (!open) return;
    wrapper.current?.querySelector<HTMLElement>('[role="menuitem"]')?.focus();
    const close = (event: PointerEvent) => {
      if (!wrapper.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', close);
    return () => document.removeEventListener('pointerdown', close);
  }, [open]);

  const close = () => {
    setOpen(false);
    toggle.current?.focus();
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const items = [...(wrapper.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
    const index = items.indexOf(document.activeElement as HTMLElement);
    if (event.key === 'Escape') {
      // Handled here: Escape elsewhere stops the run.
      event.preventDefault();
      close();
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      items[(index + step + items.length) % items.length]?.focus();
    } else if (event.key === 'Tab') {
      setOpen(false);
    }
  };

  return (
    <div className="send-menu" ref={wrapper}>
      <button
        ref={toggle}
        type="button"
        className="send-menu-toggle"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? menuId : undefined}
        disabled={disabled}
        title="More ways to send"
        onClick={() => setOpen((now) => !now)}
      >
        <span aria-hidden="true">▾</span>
        <span className="visually-hidden">More ways to send</span>
      </button>
      {open && (
        <div role="menu" id={menuId} aria-label="More ways to send" className="send-menu-items" onKeyDown={onKeyDown}>
          {CHOICES.map((choice) => (
            <button
              key={choice.delivery}
              type="button"
              role="menuitem"
              tabIndex={-1}
              onClick={() => {
                close();
                onPick(choice.delivery);
              }}
            >
              <span>{choice.label}</span>
              <small>{choice.hint}</small>
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
