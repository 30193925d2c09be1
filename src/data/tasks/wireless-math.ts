/**
 * Wireless-communication formula questions in the WirelessMathBench-XL format (WirelessMathLM #221,
 * Li et al. 2025, arXiv 2509.23219), generated: each row names a quantity and its symbols, then asks
 * one of the benchmark's three kinds of question about a textbook formula (Shannon rate, SNR, SINR,
 * Friis path loss, outage probability, energy efficiency, array gain, path-loss exponent):
 *   - `multiple_choice`: four candidate right-hand sides, A–D; the answer is `\boxed{C}`.
 *   - `fill_blank` (progressive fill-in-the-blank): one or two terms masked as `[MASK]`; the answer is
 *     one `\boxed{…}` per blank, in order.
 *   - `full_equation`: the whole right-hand side masked; the answer is `\boxed{…}`.
 * Columns: `type`, `background`, `equation` (with `[MASK]`), `options` (A–D, multiple choice only),
 * `answer` (letter, or the blanks joined by ` ;; `), as the benchmark's `type`, `background`,
 * `equation`, `options` and `correct_answer`; the `wireless-math` reward verifies them.
 *
 * Why GRPO has work: the SFT teacher answers `teacherErrorRate` of its demonstrations with a
 * plausible slip (a wrong option, `\log_{10}` for `\log_2`, a dropped `1+`, a square left out).
 * Held out: rows whose prompt hashes into one bucket of eight are never trained on.
 * Is not: the benchmark's 4,027 problems from research papers (not shipped here).
 */
import { z } from 'zod';
import { BLANK_SEPARATOR, wirelessMath } from '../../rewards/wireless-math.js';
import { makeRewardInput, type NamedReward } from '../../rewards/types.js';
import { generatedSplit, type Pick } from '../generated-split.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `wirelessMathTask` accepts (config `taskOptions`); unknown keys are refused. */
export const wirelessMathOptionsSchema = z
  .object({
    /** Question kinds to generate (default all three). */
    types: z
      .array(z.enum(['multiple_choice', 'fill_blank', 'full_equation']))
      .min(1)
      .optional(),
    /** Fraction of SFT demonstrations with a plausible wrong answer (default 0.4). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

/** A right-hand-side term; `wrong` is the slip a student makes there (terms without one are never masked). */
interface Term {
  right: string;
  wrong?: string;
}

interface Formula {
  quantity: string;
  symbols: string;
  lhs: string;
  terms: Term[];
}

// Two spellings of each formula (symbol names vary as they do across papers).
const FORMULAS: Formula[] = [
  ...[
    ['C', 'B', '\\gamma'],
    ['R', 'W', '\\rho'],
  ].map(([lhs, b, g]) => ({
    quantity: 'rate',
    symbols: `${b} bandwidth, ${g} SNR`,
    lhs: lhs!,
    terms: [{ right: b! }, { right: '\\log_2', wrong: '\\log_{10}' }, { right: `(1+${g})`, wrong: `(${g})` }],
  })),
  ...[
    ['\\gamma', 'P', 'h', '\\sigma^2'],
    ['\\rho', 'p', 'g', 'N_0'],
  ].map(([lhs, p, h, n]) => ({
    quantity: 'SNR',
    symbols: `${p} power, ${h} channel, ${n} noise`,
    lhs: lhs!,
    terms: [{ right: p! }, { right: `|${h}|^2`, wrong: `|${h}|` }, { right: `/${n}`, wrong: `*${n}` }],
  })),
  ...[
    ['\\gamma', 'P', 'h', 'I'],
    ['\\rho', 'p', 'g', 'J'],
  ].map(([lhs, p, h, i]) => ({
    quantity: 'SINR',
    symbols: `${p} power, ${h} channel, ${i} interference`,
    lhs: lhs!,
    terms: [{ right: `${p}|${h}|^2` }, { right: `/(${i}+\\sigma^2)`, wrong: `/\\sigma^2` }],
  })),
  ...[
    ['P_r', 'P_t', 'd'],
    ['p_r', 'p_t', 'r'],
  ].map(([lhs, pt, d]) => ({
    quantity: 'Friis',
    symbols: `${pt} sent, \\lambda wavelength, ${d} distance`,
    lhs: lhs!,
    terms: [
      { right: `${pt}G_tG_r` },
      { right: `(\\lambda/(4\\pi ${d}))`, wrong: `(\\lambda/(2\\pi ${d}))` },
      { right: '^2', wrong: '^3' },
    ],
  })),
  ...[
    ['P_{out}', '\\gamma_{th}', '\\bar\\gamma'],
    ['p_{out}', '\\theta', '\\bar\\rho'],
  ].map(([lhs, th, mean]) => ({
    quantity: 'Rayleigh outage',
    symbols: `${th} threshold, ${mean} mean SNR`,
    lhs: lhs!,
    terms: [{ right: '1' }, { right: `-e^{-${th}/${mean}}`, wrong: `-e^{-${mean}/${th}}` }],
  })),
  ...[
    ['\\eta', 'R', 'P'],
    ['EE', 'C', 'p'],
  ].map(([lhs, r, p]) => ({
    quantity: 'energy efficiency',
    symbols: `${r} rate, ${p} power`,
    lhs: lhs!,
    terms: [{ right: r! }, { right: `/(${p}+P_c)`, wrong: `/${p}` }],
  })),
  ...[
    ['C', 'N', '\\gamma'],
    ['R', 'M', '\\rho'],
  ].map(([lhs, n, g]) => ({
    quantity: 'rate with array gain',
    symbols: `${n} antennas, ${g} SNR`,
    lhs: lhs!,
    terms: [
      { right: '\\log_2', wrong: '\\log_{10}' },
      { right: `(1+${n}${g})`, wrong: `(1+${g})` },
    ],
  })),
  ...[
    ['P_r', 'P_t', 'd', '\\alpha'],
    ['p_r', 'p_t', 'r', '\\beta'],
  ].map(([lhs, pt, d, a]) => ({
    quantity: 'path loss',
    symbols: `${pt} sent, ${d} distance, ${a} exponent`,
    lhs: lhs!,
    terms: [{ right: pt! }, { right: `${d}^{-${a}}`, wrong: `${d}^{${a}}` }],
  })),
];

type Kind = 'multiple_choice' | 'fill_blank' | 'full_equation';

const join = (terms: readonly string[]) => terms.join('');
const rightSide = (formula: Formula) => join(formula.terms.map((term) => term.right));
/** The right-hand side with the terms at `slips` replaced by their wrong forms. */
const withSlips = (formula: Formula, slips: readonly number[]) =>
  join(formula.terms.map((term, i) => (slips.includes(i) ? term.wrong! : term.right)));
const slippable = (formula: Formula) => formula.terms.flatMap((term, i) => (term.wrong !== undefined ? [i] : []));

function makeRow(formula: Formula, kind: Kind, pick: Pick): Example {
  const background = `${formula.quantity}; ${formula.symbols}`;
  const slips = slippable(formula);
  if (kind === 'multiple_choice') {
    // The right side and three wrong ones (one slip each, then two), in a drawn order.
    const wrongs = [...new Set([...slips.map((i) => withSlips(formula, [i])), withSlips(formula, slips)])];
    const candidates = [rightSide(formula), ...wrongs.slice(0, 3)];
    while (candidates.length < 4) candidates.push(`${rightSide(formula)}^2`);
    const order = candidates.map((text) => ({ text, key: pick(1000) })).sort((a, b) => a.key - b.key);
    const letters = ['A', 'B', 'C', 'D'] as const;
    const options = Object.fromEntries(order.map((option, i) => [letters[i], option.text]));
    const answer = letters[order.findIndex((option) => option.text === rightSide(formula))]!;
    const wrong = letters[(letters.indexOf(answer) + 1 + pick(3)) % 4]!;
    const lines = letters.map((letter) => `${letter}) ${options[letter]}`).join('\n');
    return {
      prompt: `[mcq] ${background}\n${formula.lhs}=?\n${lines}\n`,
      type: kind,
      background,
      equation: `${formula.lhs}=[MASK]`,
      options,
      answer,
      wrongAnswer: `\\boxed{${wrong}}`,
    };
  }
  const masked =
    kind === 'full_equation'
      ? []
      : slips.length > 1 && pick(2) === 0
        ? slips.slice(0, 2)
        : [slips[pick(slips.length)]!];
  const equation =
    kind === 'full_equation'
      ? `${formula.lhs}=[MASK]`
      : `${formula.lhs}=${join(formula.terms.map((term, i) => (masked.includes(i) ? '[MASK]' : term.right)))}`;
  const blanks = kind === 'full_equation' ? [rightSide(formula)] : masked.map((i) => formula.terms[i]!.right);
  // The slip: the first blank (or, for a whole side, one term) in its wrong form.
  const wrongBlanks =
    kind === 'full_equation'
      ? [withSlips(formula, [slips[pick(slips.length)]!])]
      : masked.map((i, k) => (k === 0 ? formula.terms[i]!.wrong! : formula.terms[i]!.right));
  return {
    prompt: `[${kind === 'fill_blank' ? 'fill' : 'full'}] ${background}\n${equation}\n`,
    type: kind,
    background,
    equation,
    answer: blanks.join(BLANK_SEPARATOR),
    wrongAnswer: wrongBlanks.map((blank) => `\\boxed{${blank}}`).join(''),
  };
}

const sample = (kinds: readonly Kind[], count: number, seed: number, heldOut: boolean): Example[] =>
  generatedSplit('wireless-math', count, seed, heldOut, (pick) =>
    makeRow(FORMULAS[pick(FORMULAS.length)]!, kinds[pick(kinds.length)]!, pick),
  );

const goldCompletion = (row: Example) =>
  row.type === 'multiple_choice'
    ? `\\boxed{${String(row.answer)}}`
    : String(row.answer)
        .split(BLANK_SEPARATOR)
        .map((blank) => `\\boxed{${blank}}`)
        .join('');

/** The wireless-math task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function wirelessMathTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('wireless-math', wirelessMathOptionsSchema, raw);
  const kinds: Kind[] = parsed.types ?? ['multiple_choice', 'fill_blank', 'full_equation'];
  const errorRate = parsed.teacherErrorRate ?? 0.4;
  const verify = wirelessMath();
  const alphabet = FORMULAS.flatMap((formula) => [
    formula.quantity,
    formula.symbols,
    formula.lhs,
    ...formula.terms.flatMap((term) => [term.right, term.wrong ?? '']),
  ]).join('');
  return {
    name: 'wireless-math',
    description:
      'wireless formulas as multiple choice, fill-in-the-blank and full equation completion (WirelessMathLM #221)',
    alphabet: [...new Set(`${alphabet}[]mcqfilu=?ABCD)\n\\boxed{}MASK;^2`)].join(''),
    trainExamples: (count, seed) => sample(kinds, count, seed, false),
    evalExamples: (count, seed) => sample(kinds, count, seed, true),
    demonstration: (row, draw) => (draw() < errorRate ? String(row.wrongAnswer) : goldCompletion(row)),
    rewards: (): NamedReward[] => [{ name: 'verified', reward: verify, weight: 1 }],
    isCorrect: async (row, completion) => (await verify(makeRewardInput({ completion, row }))) === 1,
  };
}
