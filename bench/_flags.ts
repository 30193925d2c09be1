/**
 * Flag reading shared by the bench scenarios (`--name value` pairs and bare `--switch`es).
 * Is not: a CLI framework; benches take a handful of flags and print what they measured.
 */
export interface FlagReader {
  /** The value after `flag`, or `fallback` when the flag is absent. */
  value(flag: string, fallback: string): string;
  /** The value after `flag` as a positive integer, or an error naming the flag. */
  positive(flag: string, fallback: string): number;
  /** A comma-separated list of positive integers (e.g. `--threads 1,2`). */
  positiveList(flag: string, fallback: string): number[];
  /** A comma-separated list of M×K×N matmul shapes written `MxKxN`. */
  shapes(flag: string, fallback: string): { M: number; K: number; N: number }[];
}

/** The matmul shapes of the issues' targets: 512³, 1024³, 2048×256×1024, 2048×1024×256 (M×K×N). */
export const DEFAULT_MATMUL_SHAPES = '512x512x512,1024x1024x1024,2048x256x1024,2048x1024x256';

export function readFlags(argv: readonly string[]): FlagReader {
  const value = (flag: string, fallback: string): string => {
    const index = argv.indexOf(flag);
    return index >= 0 && index + 1 < argv.length ? argv[index + 1] : fallback;
  };
  const positive = (flag: string, fallback: string): number => {
    const parsed = Number(value(flag, fallback));
    if (!Number.isInteger(parsed) || parsed < 1)
      throw new Error(`${flag}: a positive integer, got '${value(flag, fallback)}'`);
    return parsed;
  };
  const positiveList = (flag: string, fallback: string): number[] => {
    const list = value(flag, fallback).split(',').map(Number);
    if (!list.every((item) => Number.isInteger(item) && item > 0))
      throw new Error(`${flag}: positive integers, got '${value(flag, fallback)}'`);
    return list;
  };
  const shapes = (flag: string, fallback: string) =>
    value(flag, fallback)
      .split(',')
      .map((text) => {
        const parts = text.split('x').map(Number);
        if (parts.length !== 3 || !parts.every((part) => Number.isInteger(part) && part > 0)) {
          throw new Error(`${flag}: '${text}' is not MxKxN with positive integers`);
        }
        return { M: parts[0], K: parts[1], N: parts[2] };
      });
  return { value, positive, positiveList, shapes };
}
