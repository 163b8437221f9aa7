import type { SessionEvent } from '@stepwise/shared-types';

/** The model's health in words, for the header and the settings panel. */
export interface HealthSummary {
  status: 'ok' | 'failing' | 'unknown';
  /** A few words: "Model working", "Model unreachable", "Not checked yet". */
  label: string;
  /** What went wrong, as the server says it. */
  message?: string;
  /** What to do about it ("check OPENAI_BASE_URL"). */
  hint?: string;
  /** When the server last learnt it (ISO-8601). */
  checkedAt?: string;
}

/** How the session's model is doing; a server that does not report health reads as not checked (the demo as always there). */
export function healthSummary(session: SessionEvent | undefined): HealthSummary {
  const health = session?.model_health;
  const details = {
    ...(health?.message ? { message: health.message } : {}),
    ...(health?.hint ? { hint: health.hint } : {}),
    ...(health?.checked_at ? { checkedAt: health.checked_at } : {}),
  };
  switch (health?.status) {
    case 'ok':
      return { status: 'ok', label: 'Model working', ...details };
    case 'failing':
      return { status: 'failing', label: 'Model unreachable', ...details };
    default:
      return { status: 'unknown', label: session?.demo ? 'Built in, always available' : 'Not checked yet', ...details };
  }
}
