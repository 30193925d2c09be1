/**
 * Tests of the columns each built-in reward declares (issue 39) and of the check that reads them.
 * Each factory is scored on a row built from its declared columns only: it must score (so every
 * column it cannot do without is declared), and must fail once any one of them is taken away (so
 * every declared column is one it needs).
 */
import { describe, expect, it } from 'vitest';
import { rewardFactories } from './factories.js';
import { checkRewardColumns, missingRewardColumns } from './row-columns.js';
import { scoreRewards } from './run.js';
import { makeRewardInput, type RewardEpisode, type RewardFn } from './types.js';

/** A value for every column name a case declares (the row is built from these, declared columns only). */
const values: Record<string, unknown> = {
  answer: '3',
  gold: '3',
  schema: 'CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (3);',
  box: [0, 0, 10, 10],
  pair_id: 'p1',
  reference: 'the cat sat',
  tests: ['if (f() !== 3) throw new Error("wrong")'],
  numbers: [1, 2],
  target: 3,
  testbench: 'module tb; initial begin $display("PASS"); $finish; end endmodule',
  module: 'm',
  ports: 'a',
  relevance: [2, 0],
  problem: 'mvc',
  graph: { nodes: ['A', 'B'], edges: [[0, 1, 1]] },
  optimum: 1,
  nl: 'eventually x is above 3',
  domain: 'math',
  type: 'multiple_choice',
  taskModel: { words: { good: [1, 0], bad: [0, 1], fine: [1, 0] }, verbalizers: ['good', 'bad'] },
  examples: [{ text: 'fine', label: 0 }],
  source: 'the quick brown fox jumps over the lazy dog near the old river bank today',
  solution: '<answer> STOP, STRAIGHT </answer>',
  mask: [
    [0, 0],
    [10, 0],
    [10, 10],
  ],
  transformations: [[1, 'color', 'red']],
};

/** Per factory: options, a completion, and what a row with its declared columns still fails with (offline). */
interface Case {
  options?: Record<string, unknown>;
  completion?: string;
  /** Values for this case's columns where the shared ones do not fit (the `answer` of SQL or STL). */
  values?: Record<string, unknown>;
  /** The reward cannot run here for another reason (a network judge): the failure must not be about columns. */
  failsWith?: RegExp;
}
const stl = { answer: 'F[0,5] x>3' };
const judge = { baseUrl: 'http://127.0.0.1:9/v1', model: 'm', maxAttempts: 1, requestTimeoutMs: 2000 };
const cases: Record<string, Case> = {
  'math-answer': { completion: '\\boxed{3}' },
  'think-format': {},
  'tag-format': {},
  regex: { options: { pattern: 'x' } },
  'required-sections': { options: { sections: ['a'] } },
  'json-valid': {},
  'json-schema': { completion: '{"a": 1}', values: { schema: { type: 'object' } } },
  'exact-match': {},
  'multiple-choice': { completion: 'A', options: {} },
  'box-iou': { completion: '[0, 0, 10, 10]' },
  'count-answer': {},
  'soft-overlong': { options: { unit: 'characters' } },
  'length-budget': { options: { budget: 10, unit: 'characters' } },
  'repetition-penalty': {},
  'ternary-truthfulness': {},
  'length-among-correct': {},
  'grpo-lambda': {},
  'majority-vote': {},
  'co-reward': {},
  scope: {},
  'vote-frequency': {},
  ttrv: {},
  unlikeliness: {},
  'negative-surprisal': {},
  'self-aligned': {},
  'tool-efficiency': {},
  bleu: {},
  'rouge-l': {},
  'char-f1': {},
  'code-tests': { options: { language: 'javascript' }, completion: '```js\nfunction f() { return 3; }\n```' },
  equation: { completion: '1 + 2' },
  'sql-execution': { completion: 'SELECT x FROM t', values: { answer: 'SELECT x FROM t', gold: 'SELECT x FROM t' } },
  'sql-syntax': { completion: 'SELECT x FROM t' },
  'sql-schema-linking': {
    options: { goldColumn: 'gold' },
    completion: 'SELECT x FROM t',
    values: { answer: 'SELECT x FROM t', gold: 'SELECT x FROM t' },
  },
  'sql-ngram': { completion: 'SELECT x FROM t' },
  'verilog-testbench': { completion: 'module m(input a); wire b; assign b = a; endmodule' },
  'verilog-structure': { completion: 'module m(input a); endmodule' },
  'verilog-format': { options: { style: 'module' }, completion: 'module m(input a); endmodule' },
  'ranking-ndcg': { completion: '<answer>2, 0</answer>' },
  'ranking-recall': { completion: '<answer>2, 0</answer>' },
  'score-distribution': { options: { maxScore: 2 }, completion: '<answer>2 0</answer>' },
  'graph-solution': { completion: '[A]' },
  'stl-propositions': { completion: 'F[0,5] x>3', values: stl },
  'stl-templated-nl': { completion: 'F[0,5] x>3', values: stl },
  'stl-succinctness': { completion: 'F[0,5] x>3', values: stl },
  'stl-symbols': { completion: 'F[0,5] x>3', values: stl },
  'stl-traces': { completion: 'F[0,5] x>3', options: { traces: 4 }, values: stl },
  'llm-judge': { options: { ...judge, referenceColumn: 'reference' }, failsWith: /gave up|fetch|connect/i },
  'domain-router': { options: { routes: { math: { name: 'think-format' } } } },
  'wireless-math': { completion: '\\boxed{A}' },
  'rlprompt-classification': { completion: 'it was' },
  stealthrl: { completion: 'a quick brown fox leaps over a lazy dog close to the old river bank now' },
  'plan-speed': { completion: '<answer> STOP, STRAIGHT </answer>' },
  'plan-path': { completion: '<answer> STOP, STRAIGHT </answer>' },
  'plan-format': {},
  'numeric-answer': {},
  cerm: { completion: '<answer>3</answer>' },
  'temporal-iou': { completion: '<answer> 1 to 3 </answer>', values: { answer: '1 to 3' } },
  'temporal-format': { completion: '<answer> 1 to 3 </answer>' },
  'point-in-box': { completion: '(5, 5)' },
  'mask-iou': { completion: '[[0, 0], [10, 0], [10, 10]]' },
  'transformation-credit': { completion: '<answer>(1, color, red)</answer>' },
  'think-answer-consistency': {
    options: { correctness: { name: 'math-answer' } },
    completion: '<think>3</think><answer>3</answer>',
  },
  'outcome-gated-process': { options: { process: { name: 'think-format' } }, completion: '\\boxed{3}' },
  'refine-trust': { completion: '\\boxed{3}' },
  'step-count': {},
  masa: { completion: '\\boxed{3}' },
  smartsearch: { options: { gamma: 0.1, phiMin: 0.5, phiMax: 0.3 } },
};

const episode = { messages: [], toolCalls: [], turns: 1, turnRewards: [], stopReason: 'stop' } satisfies RewardEpisode;

/** The failures of scoring a group of two completions on `row` (every kind of reward, as the trainer scores). */
async function failuresOn(name: string, row: Record<string, unknown>): Promise<string[]> {
  const { options = {}, completion = '3' } = cases[name]!;
  const reward = rewardFactories.get(name).create(options);
  const inputs = [0, 1].map((indexInGroup) =>
    makeRewardInput({
      completion,
      completionIds: [1, 2],
      policyLogprobs: [-0.5, -0.5],
      policyLogprobsAfter: async () => [-1, -1],
      row,
      group: [completion, completion],
      indexInGroup,
      episode,
    }),
  );
  const matrix = await scoreRewards([{ name, reward, weight: 1 }], [inputs], { timeoutMs: 20_000 });
  return matrix.failures.map((failure) => failure.message);
}

describe('the columns each built-in reward declares', () => {
  it('every built-in has a case here (a new reward must say what it reads)', () => {
    expect(rewardFactories.names().filter((name) => !(name in cases))).toEqual([]);
  });

  it.each(Object.keys(cases))(
    '%s scores on its declared columns alone and fails without any one',
    async (name) => {
      const { options = {}, failsWith } = cases[name]!;
      const columnValues = { ...values, ...cases[name]!.values };
      const declared = rewardFactories
        .get(name)
        .columns(options)
        .map(({ column }) => column);
      for (const column of declared) expect(columnValues, `a value for column "${column}"`).toHaveProperty([column]);
      const row = Object.fromEntries(declared.map((column) => [column, columnValues[column]]));
      const failures = await failuresOn(name, row);
      if (failsWith) for (const message of failures) expect(message).toMatch(failsWith);
      else expect(failures.join('\n')).toBe('');
      for (const column of declared) {
        const { [column]: _, ...without } = row;
        const failuresWithout = await failuresOn(name, without);
        expect(failuresWithout.length, `"${name}" without column "${column}"`).toBeGreaterThan(0);
        if (failsWith) expect(failuresWithout.join('\n')).not.toMatch(failsWith);
      }
    },
    60_000,
  );

  it('columns follow the options that name them, and a column read only when named is not required', () => {
    expect(rewardFactories.get('char-f1').columns({ referenceColumn: 'gold' })).toEqual([
      { column: 'gold', option: 'referenceColumn' },
    ]);
    expect(rewardFactories.get('code-tests').columns({ setupColumn: 'setup' })).toEqual([
      { column: 'tests', option: 'testsColumn' },
    ]);
    expect(rewardFactories.get('json-schema').columns({ schema: { type: 'object' } })).toEqual([]);
    expect(rewardFactories.get('verilog-format').columns({})).toEqual([]);
    // With the run's task check standing for correctness, no answer column is read.
    const taskCorrectness: RewardFn = () => 1;
    expect(rewardFactories.get('tool-efficiency').columns({}, { taskCorrectness })).toEqual([]);
    expect(rewardFactories.get('unlikeliness').columns({}, {})).toEqual([{ column: 'answer', option: 'answerColumn' }]);
    expect(rewardFactories.get('unlikeliness').columns({ correctness: { name: 'char-f1' } })).toEqual([
      { column: 'reference', option: 'correctness "char-f1"\'s referenceColumn' },
    ]);
  });
});

describe('checkRewardColumns', () => {
  const charF1 = rewardFactories.get('char-f1');
  const rewards = [
    { name: 'think-format', reward: () => 1, weight: 1, columns: [] },
    { name: 'char-f1', reward: charF1.create(), weight: 1, columns: charF1.columns() },
  ];

  it('names the reward position, the column, its option and the first row without it', () => {
    const rows = [
      { prompt: 'p', reference: 'x' },
      { prompt: 'p', answer: '4' },
    ];
    expect(() => checkRewardColumns(rewards, rows)).toThrow(
      'invalid config:\n- rewards[1]: "char-f1" reads column "reference" (its referenceColumn), which training row 1 does not have (columns: prompt, answer)',
    );
  });

  it('passes rows that have every column; null counts as missing', () => {
    expect(() => checkRewardColumns(rewards, [{ prompt: 'p', reference: 'x' }])).not.toThrow();
    expect(missingRewardColumns(rewards, [{ prompt: 'p', reference: null }])).toHaveLength(1);
  });
});
