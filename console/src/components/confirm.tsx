import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

/**
 * A button whose action runs only after a second, explicit yes in a modal <dialog> (the
 * browser's own: focus is trapped in it and Escape closes it). Errors are shown in the dialog.
 */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, children }: { label: string; question: string; confirmLabel: string; onConfirm: () => Promise<void>; children?: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const questionId = useId();
  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
    if (!open && dialog.current?.open) dialog.current.close();
  }, [open]);
  const confirm = async (): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm();
      setOpen(false);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="danger" onClick={() => setOpen(true)}>
        {label}
      </button>
      <dialog ref={dialog} onClose={() => setOpen(false)} aria-labelledby={questionId}>
        <p id={questionId}>{question}</p>
        {children}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="dialog-buttons">
          <button type="button" onClick={() => setOpen(false)} autofocus>
            Keep it
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => void confirm()}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}
