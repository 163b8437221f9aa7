import { describe, expect, it } from 'vitest';
import { humanSize, withHumanSizes } from '../../frontend/src/lib/sizes.ts';
import { formatClock, formatDuration, formatWhen, localTimeOf } from '../../frontend/src/lib/time.ts';

// Local times, so that the expectations hold in any time zone.
const now = new Date(2026, 10, 23, 14, 30);
const at = (...parts: [number, number, number, number, number]) => new Date(...parts).toISOString();

describe('times as people say them', () => {
  it('says how long ago a chat was active, then the time of day, then the date', () => {
    expect(formatWhen(new Date(2026, 10, 23, 14, 29, 30).toISOString(), now, 'en-GB')).toBe('just now');
    expect(formatWhen(at(2026, 10, 23, 14, 28), now, 'en-GB')).toBe('2 min ago');
    expect(formatWhen(at(2026, 10, 23, 9, 5), now, 'en-GB')).toBe('9:05');
    expect(formatWhen(at(2026, 10, 22, 23, 0), now, 'en-GB')).toBe('Yesterday');
    expect(formatWhen(at(2026, 2, 12, 8, 0), now, 'en-GB')).toBe('12 Mar');
    expect(formatWhen(at(2025, 2, 12, 8, 0), now, 'en-GB')).toBe('12 Mar 2025');
  });

  it('never shows an ISO string for a run’s start', () => {
    expect(formatClock(at(2026, 10, 23, 14, 5), now, 'en-GB')).toBe('14:05');
    expect(formatClock(at(2026, 10, 20, 14, 5), now, 'en-GB')).toBe('20 Nov, 14:05');
    expect(formatClock(at(2026, 10, 23, 14, 5), now, 'en-US')).toBe('2:05 PM');
  });

  it('says durations in ms, seconds and minutes', () => {
    expect(formatDuration(320)).toBe('320 ms');
    expect(formatDuration(4_240)).toBe('4.2 s');
    expect(formatDuration(6_000)).toBe('6 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
  });

  it('gives the local time of a tool result that is a timestamp, and nothing for other text', () => {
    expect(localTimeOf(at(2026, 10, 23, 14, 5), 'en-GB')).toMatch(/Monday.*23 November 2026.*14:05:00/);
    expect(localTimeOf('126')).toBeUndefined();
    expect(localTimeOf('It is 2026-11-23T14:05:00Z')).toBeUndefined();
  });
});

describe('sizes as people say them', () => {
  it('says 10 MB, not 10485760 bytes', () => {
    expect(humanSize(10_485_760)).toBe('10 MB');
    expect(humanSize(1536)).toBe('1.5 KB');
    expect(humanSize(100)).toBe('100 B');
  });

  it('rewrites the byte counts in an upload refusal', () => {
    expect(withHumanSizes('Files are limited to 10485760 bytes; this one has 20000000')).toBe('Files are limited to 10 MB; this one has 19.1 MB');
    expect(withHumanSizes('Files are limited to 10 MB')).toBe('Files are limited to 10 MB');
    expect(withHumanSizes('A session holds at most 100 files')).toBe('A session holds at most 100 files');
  });
});
