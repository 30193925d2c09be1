/**
 * The options that make each built-in policy loss runnable on a generic test batch: most run with
 * none, a few have required options without a default (DISPO's bounds, DNO's η). Tests that run
 * every registered loss take them from here, so a new loss with a required option is added once.
 *
 * Is not: defaults the trainer uses (a config must name these options; the loss refuses without them).
 */
export function runnableLossOptions(name: string): Record<string, unknown> {
  if (name === 'dispo') return { positiveBounds: [0.2, 0.2], negativeBounds: [0.2, 0.2] };
  if (name === 'dno') return { eta: 1 };
  return {};
}
