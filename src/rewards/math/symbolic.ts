/**
 * Equality of two LaTeX answers by the Cortex Compute Engine (`@cortex-js/compute-engine`): its
 * LaTeX parser and its numeric evaluation, for what our small parser (`expression.ts`) does not
 * know: `\log_b`, `\exp`, complex powers such as `e^{i\pi}`, `\lfloor`, `\sin^2 x` and the rest of
 * the LaTeX a computer-algebra system reads. Closed answers compare by value (real and imaginary
 * parts); answers with free variables compare at fixed pseudo-random points, as `expression.ts` does.
 *
 * Not here: normalising the text (`normalise.ts`), structure such as tuples, intervals and sets
 * (`verify.ts`). Not a timeout either: JavaScript cannot stop a synchronous call, so the bound is on
 * the input instead (length and nesting), below which one comparison takes milliseconds.
 */
import { ComputeEngine } from '@cortex-js/compute-engine';

/** Longest answer handed to the engine; past it the answer is not an expression (its parser recurses). */
const MAX_LENGTH = 2000;
/** Deepest bracket or brace nesting handed to the engine. */
const MAX_DEPTH = 100;
/** Most backslash commands in one answer (`\sqrt\sqrt\sqrt…1` nests without brackets). */
const MAX_COMMANDS = 100;

type Parsed = ReturnType<ComputeEngine['parse']>;

let engine: ComputeEngine | undefined;

/** The shared engine, built on first use: construction takes ~100 ms, which a run that never needs it should not pay. */
function getEngine(): ComputeEngine {
  engine ??= new ComputeEngine();
  return engine;
}

/** Deepest nesting of `({[` in the text. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (const char of text) {
    if (char === '(' || char === '[' || char === '{') deepest = Math.max(deepest, ++depth);
    else if (char === ')' || char === ']' || char === '}') depth--;
  }
  return deepest;
}

/** Parses an answer with the engine; null when it is too large or does not parse cleanly. */
function parseLatex(latex: string): Parsed | null {
  if (latex.length > MAX_LENGTH || nestingDepth(latex) > MAX_DEPTH) return null;
  if ((latex.match(/\\/g)?.length ?? 0) > MAX_COMMANDS) return null;
  // The engine computes factorials exactly: 99999! takes seconds. Ours evaluates them (to NaN past 170!).
  if (latex.includes('!')) return null;
  try {
    const parsed = getEngine().parse(latex);
    return parsed.isValid ? parsed : null;
  } catch {
    return null; // the engine throws on some malformed input rather than returning an Error node
  }
}

/** Real and imaginary parts of a closed expression; NaN when it has no numeric value. */
function numericValue(expression: Parsed): [number, number] {
  try {
    const value = expression.N();
    return [value.re, value.im];
  } catch {
    return [Number.NaN, Number.NaN];
  }
}

function close(a: number, b: number, tolerance: number): boolean {
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= tolerance * Math.max(Math.abs(a), Math.abs(b)) || Math.abs(a - b) <= 1e-12;
}

function valuesClose(a: [number, number], b: [number, number], tolerance: number): boolean {
  const imaginaryA = Number.isNaN(a[1]) ? 0 : a[1];
  const imaginaryB = Number.isNaN(b[1]) ? 0 : b[1];
  return close(a[0], b[0], tolerance) && close(imaginaryA, imaginaryB, tolerance);
}

/** The same fixed points for every call, so a verdict never depends on luck between runs. */
const POINTS = [0.73, 1.41, 2.07, 0.58, 1.86, 2.31];

/**
 * True or false when the engine can judge both answers, null when it cannot parse one of them.
 * `tolerance` is relative (1e-6 compares six significant digits).
 */
export function engineEqual(predicted: string, gold: string, tolerance: number): boolean | null {
  const left = parseLatex(predicted);
  const right = parseLatex(gold);
  if (!left || !right) return null;
  if (left.isSame(right)) return true;
  const names = [...new Set([...left.unknowns, ...right.unknowns])];
  if (names.length === 0) {
    const [a, b] = [numericValue(left), numericValue(right)];
    if (Number.isNaN(a[0]) || Number.isNaN(b[0])) return null; // a tuple, a string, a function: not a number
    return valuesClose(a, b, tolerance);
  }
  let checked = 0;
  for (let trial = 0; trial < POINTS.length; trial++) {
    const substitution = Object.fromEntries(
      names.map((name, index) => [name, POINTS[(trial + index) % POINTS.length]!]),
    );
    const a = numericValue(left.subs(substitution));
    const b = numericValue(right.subs(substitution));
    if (Number.isNaN(a[0]) && Number.isNaN(b[0])) continue;
    if (!valuesClose(a, b, Math.min(tolerance, 1e-8))) return false;
    checked++;
  }
  return checked >= 3;
}
