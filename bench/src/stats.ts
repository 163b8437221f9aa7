/** The q-quantile (0..1) of the values, by nearest rank. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export const median = (values: number[]) => quantile(values, 0.5);
export const round = (value: number, digits = 1) => Number(value.toFixed(digits));
export const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
