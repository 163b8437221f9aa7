const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * When something happened, the way a chat list says it: "just now", "5 min ago", "14:05" earlier
 * today, "Yesterday", then the date ("12 Mar", with the year when it is not this one).
 */
export function formatWhen(iso: string, now: Date = new Date(), locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const ago = now.getTime() - date.getTime();
  if (ago < MINUTE && ago > -MINUTE) return 'just now';
  if (ago > 0 && ago < HOUR) return `${Math.floor(ago / MINUTE)} min ago`;
  if (sameDay(date, now)) return clock(date, locale);
  const yesterday = new Date(now);
  yesterday.setDate(now.getDate() - 1);
  if (sameDay(date, yesterday)) return 'Yesterday';
  return formatDate(date, now, locale);
}

/** A time of day ("14:05"), with the date in front when it is not today ("12 Mar, 14:05"). */
export function formatClock(iso: string, now: Date = new Date(), locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return sameDay(date, now) ? clock(date, locale) : `${formatDate(date, now, locale)}, ${clock(date, locale)}`;
}

/** The full local date and time, for a tooltip. */
export function formatFull(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(locale, { dateStyle: 'full', timeStyle: 'medium' });
}

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;

/** The local date and time of a text that is one ISO-8601 timestamp (a tool's result, say); undefined for any other text. */
export function localTimeOf(text: string, locale?: string): string | undefined {
  const trimmed = text.trim();
  return ISO_TIMESTAMP.test(trimmed) && !Number.isNaN(Date.parse(trimmed)) ? formatFull(trimmed, locale) : undefined;
}

/** A duration as people say it: "320 ms", "4.2 s", "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < MINUTE) return `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s`;
  const minutes = Math.floor(ms / MINUTE);
  const seconds = Math.round((ms % MINUTE) / 1000);
  return seconds ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

function clock(date: Date, locale: string | undefined): string {
  return date.toLocaleTimeString(locale, { hour: 'numeric', minute: '2-digit' });
}

function formatDate(date: Date, now: Date, locale: string | undefined): string {
  const thisYear = date.getFullYear() === now.getFullYear();
  return date.toLocaleDateString(locale, { day: 'numeric', month: 'short', ...(thisYear ? {} : { year: 'numeric' }) });
}

function sameDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}
