/**
 * Math-verifier evaluation on real data: the fraction of GSM8K test and MATH-500 gold answers that
 * verify against the final answer of their own reference solution, and the false-positive rate on
 * constructed wrong answers (perturbed gold answers and other problems' answers), and the speed:
 * verifications per second of real solutions, and of answers only the Compute Engine reads, each
 * as a ratio to the 10,000-a-second target (issue 35: a trainer or reward server must never wait on it), and
 * the milliseconds one verification takes on each of issue 36's hostile answers (≤ 1 s each).
 * Run: `npm run bench -- math-verify [--json] [--show-failures] [--all-pairs]` (--all-pairs: ~10 s). Not a test; it prints numbers.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answersMatch, goldAnswer, verifyMathAnswer } from '../src/rewards/math.js';
import { taskRegistry } from '../src/data/index.js';

const dataRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'data');

function readJsonl(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A wrong version of an answer: the first digit bumped by one, or a letter/word changed. */
export function perturbAnswer(answer: string): string {
  const digit = /\d/.exec(answer);
  if (digit) return answer.slice(0, digit.index) + String((Number(digit[0]) + 1) % 10) + answer.slice(digit.index + 1);
  return `${answer}q`;
}

/** An equivalent rewrite of a gold answer, in the forms models write: a/b for \\frac, 1,234, 12.0, units, no \\boxed. */
export function rewriteEquivalent(answer: string): string {
  const mixed = /^(\d+)\s*\\d?frac\{(\d+)\}\{(\d+)\}$/.exec(answer); // 1\\frac{4}{5} is one and four fifths: "1 4/5", not "1(4)/(5)"
  if (mixed) return `${mixed[1]} ${mixed[2]}/${mixed[3]}`;
  let text = answer.replace(/\\d?frac\{([^{}]+)\}\{([^{}]+)\}/g, '($1)/($2)').replace(/\\left|\\right/g, '');
  if (/^\d{4,}$/.test(text)) text = Number(text).toLocaleString('en-US');
  else if (/^-?\d+$/.test(text)) text = `${text}.0 units`;
  return text;
}

interface Case {
  solution: string;
  gold: string;
}

function evaluate(name: string, cases: Case[], showFailures: boolean): Record<string, number | string> {
  let verified = 0;
  let rewrittenVerified = 0;
  let perturbedPositives = 0;
  let swappedPositives = 0;
  let swappedCount = 0;
  const failures: string[] = [];
  cases.forEach(({ solution, gold }, index) => {
    if (verifyMathAnswer(solution, gold)) verified++;
    else
      failures.push(
        `${name}#${index}: gold=${JSON.stringify(gold)} solution tail=${JSON.stringify(solution.slice(-160))}`,
      );
    const rewritten = `so the answer is $${rewriteEquivalent(gold)}$.`;
    if (verifyMathAnswer(rewritten, gold)) rewrittenVerified++;
    else failures.push(`${name}#${index}: rewrite ${JSON.stringify(rewritten)} !~ ${JSON.stringify(gold)}`);
    const wrong = perturbAnswer(gold);
    if (answersMatch(wrong, gold)) {
      perturbedPositives++;
      failures.push(`${name}#${index}: FALSE POSITIVE perturbed ${JSON.stringify(wrong)} ~ ${JSON.stringify(gold)}`);
    }
    const other = cases[(index + 7) % cases.length]!.gold;
    if (other.replace(/\s/g, '') !== gold.replace(/\s/g, '')) {
      swappedCount++;
      if (answersMatch(other, gold)) {
        swappedPositives++;
        failures.push(`${name}#${index}: other problem's answer ${JSON.stringify(other)} ~ ${JSON.stringify(gold)}`);
      }
    }
  });
  if (showFailures) for (const line of failures) console.log(line);
  return {
    dataset: name,
    rows: cases.length,
    goldVerified: verified / cases.length,
    rewrittenVerified: rewrittenVerified / cases.length,
    perturbedFalsePositives: perturbedPositives,
    swappedPairs: swappedCount,
    swappedFalsePositives: swappedPositives,
  };
}

/** Every ordered pair of distinct MATH-500 gold answers judged equal (for manual review of false positives). */
function allPairs(golds: string[]): string[] {
  const equal: string[] = [];
  golds.forEach((a, i) =>
    golds.forEach((b, j) => {
      if (i !== j && a !== b && answersMatch(a, b)) equal.push(`${a}  ~  ${b}`);
    }),
  );
  return [...new Set(equal)];
}

/** Verifications a second the verifier must sustain on real solutions (issue 35's floor: 10,000 a second). */
const TARGET_PER_SECOND = 10_000;

/** Verifications per second of `verify` over `cases`, repeated for at least half a second after one warm-up pass. */
function throughput(cases: Case[]): number {
  for (const { solution, gold } of cases) verifyMathAnswer(solution, gold);
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < 500)
    for (const { solution, gold } of cases) {
      verifyMathAnswer(solution, gold);
      count++;
    }
  return count / ((performance.now() - start) / 1000);
}

/** Answers our parser refuses, so each verification goes through the Compute Engine (its slow path). */
const ENGINE_CASES: Case[] = [
  ['\\boxed{\\log_2 8}', '3'],
  ['\\boxed{e^{i\\pi}}', '-1'],
  ['\\boxed{\\lfloor 2.7 \\rfloor}', '2'],
  ['\\boxed{\\sin^2 x + \\cos^2 x}', '1'],
  ['\\boxed{\\log_3 10}', '2'],
  ['\\boxed{\\lceil y \\rceil + x}', 'x + \\lceil y \\rceil'],
].map(([solution, gold]) => ({ solution: solution!, gold: gold! }));

/**
 * Every built-in task over the shared data: the fraction of its rows whose gold demonstration (the
 * data set's own solution, written as the task writes SFT targets) the task judges correct. Code
 * tasks run a sandbox per row, so they are sampled unless `codeRows` is Infinity.
 */
async function builtInTaskRates(
  codeRows: number,
): Promise<{ task: string; rows: number; checked: number; correct: number; sampled: boolean }[]> {
  const lines = [];
  for (const name of ['gsm8k', 'math500', 'countdown', 'game24', 'mbpp', 'humaneval']) {
    const task = await taskRegistry.load(name, { dataDirectory: dataRoot, evalFraction: 0.5 });
    // Half held out, half for training (trainExamples repeats past its end, so duplicates are dropped).
    const held = task.evalExamples(1e6, 0);
    const rows = [...held, ...task.trainExamples(held.length + 1, 0)];
    const unique = [...new Map(rows.map((row) => [JSON.stringify(row), row])).values()];
    const limit = name === 'mbpp' || name === 'humaneval' ? codeRows : Infinity;
    const checked = unique.slice(0, limit);
    let correct = 0;
    for (const example of checked)
      if (
        await task.isCorrect(
          example,
          task.demonstration(example, () => 0),
        )
      )
        correct++;
    lines.push({
      task: name,
      rows: unique.length,
      checked: checked.length,
      correct,
      sampled: checked.length < unique.length,
    });
  }
  return lines;
}

/** `\\binom{\\binom{…}{2}}{2}` nested 16 levels around 2: 185 characters once boxed. */
function nestedBinomial(levels: number): string {
  let text = '2';
  for (let level = 0; level < levels; level++) text = `\\binom{${text}}{2}`;
  return text;
}

/** Issue 36's hostile inputs (completion, gold), plus unclosed-opener and many-box ones, each verified once. */
function hostileTimings(): Array<{ input: string; milliseconds: number; verified: boolean }> {
  const set = Array.from({ length: 2000 }, (_, index) => index + 1);
  const cases: Array<[string, string, string]> = [
    ['\\binom nested 16 levels (185 characters)', `\\boxed{${nestedBinomial(16)}}`, '1'],
    ['the same inside \\lfloor (Compute Engine)', `\\boxed{\\lfloor ${nestedBinomial(16)} \\rfloor}`, '1'],
    ['a 10^5-digit number', `\\boxed{${'7'.repeat(1e5)}}`, '7'.repeat(1e5)],
    ['a 10^6-digit number', `The answer is ${'7'.repeat(1e6)}`, '7'.repeat(1e6)],
    ['\\boxed{ x 2*10^4, unclosed', '\\boxed{'.repeat(2e4), '1'],
    ['\\text{a} x 10^5 in a box', `\\boxed{${'\\text{a}'.repeat(1e5)}}`, 'a'],
    [
      'a 2000-element set vs the reordered label',
      `\\boxed{\\{${set.join(',')}\\}}`,
      `\\{${[...set].reverse().join(',')}\\}`,
    ],
    ['a label nested 10^5 deep', '\\boxed{1}', `${'{'.repeat(1e5)}1${'}'.repeat(1e5)}`],
    ['\\[ x 3*10^5, unclosed', '\\[a'.repeat(3e5), '1'],
    ['\\( x 3*10^5, unclosed', '\\(a'.repeat(3e5), '1'],
    ['\\boxed{1}\\boxed{2} x 5*10^4', '\\boxed{1}\\boxed{2}'.repeat(5e4), '1,2'],
  ];
  return cases.map(([input, completion, gold]) => {
    const start = performance.now();
    const verified = verifyMathAnswer(completion, gold);
    return { input, milliseconds: performance.now() - start, verified };
  });
}

/** Prints the verification fractions for GSM8K and MATH-500. */
export async function main(argv: string[]): Promise<void> {
  const showFailures = argv.includes('--show-failures');
  const json = argv.includes('--json');
  const gsm8k = readJsonl(join(dataRoot, 'gsm8k', 'test.jsonl')).map((row) => {
    const solution = String(row.answer);
    return { solution, gold: goldAnswer(solution) };
  });
  const gsm8kNoMarker = gsm8k.map(({ solution, gold }) => ({ solution: solution.replace(/\n?####[^\n]*$/, ''), gold }));
  const math500 = readJsonl(join(dataRoot, 'math500', 'test.jsonl')).map((row) => ({
    solution: String(row.solution),
    gold: String(row.answer),
  }));
  const results = [
    evaluate('gsm8k', gsm8k, showFailures),
    evaluate('gsm8k-without-####-line (last number)', gsm8kNoMarker, false),
    evaluate('math500', math500, showFailures),
  ];
  if (argv.includes('--all-pairs')) {
    const equal = allPairs(math500.map((row) => row.gold));
    console.log(
      `math500 all pairs: ${equal.length} ordered pairs of different gold strings judged equal:\n${equal.join('\n')}`,
    );
  }
  const speeds = [
    { path: 'gsm8k + math500 solutions', perSecond: throughput([...gsm8k, ...math500]) },
    { path: 'Compute Engine answers', perSecond: throughput(ENGINE_CASES) },
  ];
  for (const { path, perSecond } of speeds) {
    const ratio = perSecond / TARGET_PER_SECOND;
    if (json) console.log(JSON.stringify({ speed: path, verificationsPerSecond: perSecond, ratioToTarget: ratio }));
    else
      console.log(
        `speed, ${path}: ${perSecond.toFixed(0)} verifications/s on one core, ${ratio.toFixed(1)}x the 10,000/s target`,
      );
  }
  for (const { input, milliseconds, verified } of hostileTimings()) {
    if (json) console.log(JSON.stringify({ hostile: input, milliseconds, verified }));
    else console.log(`hostile answer, ${input}: ${milliseconds.toFixed(1)} ms (verified: ${verified})`);
  }
  for (const line of await builtInTaskRates(argv.includes('--all-code') ? Infinity : 40)) {
    if (json) console.log(JSON.stringify(line));
    else
      console.log(
        `task ${line.task}: gold demonstrations judged correct ${line.correct}/${line.checked} (${((line.correct / line.checked) * 100).toFixed(2)}%)${line.sampled ? `, a sample of ${line.checked} of ${line.rows} rows (--all-code for all)` : ''}`,
      );
  }
  for (const result of results) {
    if (json) console.log(JSON.stringify(result));
    else {
      const fraction = (result.goldVerified as number) * 100;
      console.log(
        `${result.dataset}: ${fraction.toFixed(2)}% of ${result.rows} gold answers verify; ` +
          `${((result.rewrittenVerified as number) * 100).toFixed(2)}% of rewritten equivalents verify; false positives: ` +
          `${result.perturbedFalsePositives} perturbed, ${result.swappedFalsePositives}/${result.swappedPairs} other-problem answers`,
      );
    }
  }
}
