// Small helpers every bench prints with.
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
export const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;
export const round = (value: number) => Number(value.toFixed(Math.abs(value) < 10 ? 2 : 1));
export const ratio = (a: number, b: number) => (b === 0 ? null : Number((a / b).toFixed(2)));
