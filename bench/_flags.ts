/**
 * Flag reading shared by the bench scenarios (`--name value` pairs and bare `--switch`es).
 * Is not: a CLI framework; benches take a handful of flags and print what they measured.
 */
export interface FlagReader {
  /** The value after `flag`, or `fallback` when the flag is absent. */
  value(flag: string, fallback: string): string;
  /** The value after `flag` as a positive integer, or an error naming the flag. */
  positive(flag: string, fallback: string): number;
}

export function readFlags(argv: readonly string[]): FlagReader {
  const value = (flag: string, fallback: string): string => {
    const index = argv.indexOf(flag);
    return index >= 0 && index + 1 < argv.length ? argv[index + 1] : fallback;
  };
  const positive = (flag: string, fallback: string): number => {
    const parsed = Number(value(flag, fallback));
    if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`${flag}: a positive integer, got '${value(flag, fallback)}'`);
    return parsed;
  };
  return { value, positive };
}
