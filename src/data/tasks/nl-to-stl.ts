/**
 * Natural language to signal temporal logic, for RESTL (#145): generated requirements over signals
 * x, y, z in templated English ("always in 0 to 4 x above 3"), each with its gold STL formula
 * (`G[0,4] x>3`). Six requirement patterns — invariance, reachability, response, until, a
 * conjunction of the two first, and eventual stability — with random signals, thresholds and
 * intervals. The sentence is `templatedEnglish(gold)` (src/rewards/stl.ts), so a correct formula
 * renders back to exactly the prompt.
 *
 * Why GRPO has work: the SFT teacher writes a near miss on `teacherErrorRate` of its
 * demonstrations — a flipped comparison, a threshold off by one, always/eventually swapped, an
 * interval bound changed, or a redundant double negation (same meaning, less succinct) — each of
 * which some of RESTL's reward aspects see and others do not.
 * Held out: requirements whose sentence hashes into one bucket of eight are never trained on.
 * Is not: the paper's benchmarks (DeepSTL, STL-DivEn; not downloaded here) or free-form English.
 */
import { z } from 'zod';
import {
  parseStl,
  printStl,
  stlPropositions,
  stlSuccinctness,
  stlSymbols,
  stlTemplatedNl,
  stlTraceAgreement,
  templatedEnglish,
  tryParseStl,
  type StlFormula,
} from '../../rewards/stl.js';
import type { NamedReward } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `nlToStlTask` accepts (config `taskOptions`); unknown keys are refused. */
export const nlToStlOptionsSchema = z
  .object({
    /** Fraction of SFT demonstrations with a near-miss formula (default 0.4). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

type Pick = (n: number) => number;
type Atom = Extract<StlFormula, { kind: 'atom' }>;

const SIGNALS = ['x', 'y', 'z'];

function atom(pick: Pick): Atom {
  return { kind: 'atom', signal: SIGNALS[pick(3)]!, comparison: pick(2) === 0 ? '>' : '<', threshold: 1 + pick(8) };
}

function interval(pick: Pick): { from: number; to: number } {
  const from = pick(3);
  return { from, to: from + 1 + pick(5) };
}

/** One requirement of the six patterns. */
function requirement(pick: Pick): StlFormula {
  switch (pick(6)) {
    case 0:
      return { kind: 'always', ...interval(pick), operand: atom(pick) };
    case 1:
      return { kind: 'eventually', ...interval(pick), operand: atom(pick) };
    case 2:
      return {
        kind: 'always',
        from: 0,
        to: 3 + pick(5),
        operand: {
          kind: 'implies',
          left: atom(pick),
          right: { kind: 'eventually', from: 0, to: 1 + pick(3), operand: atom(pick) },
        },
      };
    case 3:
      return { kind: 'until', ...interval(pick), left: atom(pick), right: atom(pick) };
    case 4: {
      const window = interval(pick);
      return {
        kind: 'and',
        left: { kind: 'always', ...window, operand: atom(pick) },
        right: { kind: 'eventually', ...window, operand: atom(pick) },
      };
    }
    default:
      return {
        kind: 'eventually',
        ...interval(pick),
        operand: { kind: 'always', from: 0, to: 1 + pick(3), operand: atom(pick) },
      };
  }
}

/** Every atom of a formula, in order (shared references: editing one edits the formula). */
function atomsOf(formula: StlFormula): Atom[] {
  switch (formula.kind) {
    case 'atom':
      return [formula];
    case 'not':
    case 'always':
    case 'eventually':
      return atomsOf(formula.operand);
    default:
      return [...atomsOf(formula.left), ...atomsOf(formula.right)];
  }
}

/** A near miss of the gold formula (the teacher's mistake). */
function nearMiss(gold: StlFormula, pick: Pick): StlFormula {
  const copy = structuredClone(gold);
  const atoms = atomsOf(copy);
  const target = atoms[pick(atoms.length)]!;
  const temporal = copy.kind === 'always' || copy.kind === 'eventually' || copy.kind === 'until' ? copy : null;
  switch (pick(5)) {
    case 0:
      target.comparison = target.comparison === '>' ? '<' : '>';
      return copy;
    case 1:
      target.threshold = target.threshold === 9 ? 8 : target.threshold + 1;
      return copy;
    case 2:
      if (temporal && temporal.kind !== 'until') {
        temporal.kind = temporal.kind === 'always' ? 'eventually' : 'always';
        return copy;
      }
      target.threshold = Math.max(0, target.threshold - 1);
      return copy;
    case 3:
      if (temporal) {
        temporal.to += 1 + pick(2);
        return copy;
      }
      target.comparison = target.comparison === '>' ? '<' : '>';
      return copy;
    default:
      return { kind: 'not', operand: { kind: 'not', operand: copy } };
  }
}

function hash(text: string): number {
  let h = 2166136261;
  for (let index = 0; index < text.length; index++) h = Math.imul(h ^ text.charCodeAt(index), 16777619) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  let state = (seed * 2654435761 + (heldOut ? 29 : 0)) >>> 0 || 1;
  const pick: Pick = (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const examples: Example[] = [];
  while (examples.length < count) {
    const gold = requirement(pick);
    const nl = templatedEnglish(gold);
    if ((hash(nl) % 8 === 0) !== heldOut) continue;
    examples.push({ prompt: `${nl}: `, nl, answer: printStl(gold), nearMiss: printStl(nearMiss(gold, pick)) });
  }
  return examples;
}

/** The nl-to-stl task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function nlToStlTask(raw: Record<string, unknown> = {}): Task {
  const errorRate = parseTaskOptions('nl-to-stl', nlToStlOptionsSchema, raw).teacherErrorRate ?? 0.4;
  return {
    name: 'nl-to-stl',
    description:
      'templated English requirements over signals x, y, z → an STL formula G[0,4] x>3 (RESTL #145; recipes/papers/restl.ts)',
    alphabet: `abcdefghijklmnopqrstuvwxyzGFU0123456789 []<>()!&|-,:.\n`,
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration: (row, draw) => String(draw() < errorRate ? row.nearMiss : row.answer),
    rewards: (): NamedReward[] => [
      { name: 'propositions', reward: stlPropositions(), weight: 1 },
      { name: 'templated-nl', reward: stlTemplatedNl(), weight: 1 },
      { name: 'succinctness', reward: stlSuccinctness(), weight: 1 },
      { name: 'symbols', reward: stlSymbols(), weight: 1 },
      { name: 'traces', reward: stlTraceAgreement(), weight: 1 },
    ],
    // Correct = the gold formula as written (canonically printed): an equivalent but padded formula is not.
    isCorrect(row, completion) {
      const predicted = tryParseStl(completion);
      return predicted !== null && printStl(predicted) === printStl(parseStl(String(row.answer)));
    },
  };
}
