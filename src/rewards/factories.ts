/**
 * The registry of built-in reward factories by name, for config files and `grpo reward NAME`:
 * each entry has a description, a citation, a zod schema for its options (unknown keys are
 * errors) and a `create(options)` returning the reward.
 *
 * Not a plugin loader: every built-in is registered explicitly below. Rewards that take
 * functions (pairwise win-rate, custom correctness) are used from code, not by name.
 */
import { z } from 'zod';
import { codeTests } from './code.js';
import { equationAnswer } from './equation.js';
import { lengthAmongCorrect } from './group.js';
import { majorityVote, voteFrequency } from './vote.js';
import { coReward } from './co-reward.js';
import { scopeReward } from './scope.js';
import { ttrvReward } from './ttrv.js';
import { negativeSurprisal, selfAlignedReward, unlikeliness } from './policy.js';
import { toolEfficiency } from './tool-efficiency.js';
import {
  exactMatch,
  jsonSchema,
  jsonValid,
  multipleChoice,
  regexMatch,
  requiredSections,
  tagFormat,
  thinkFormat,
} from './format.js';
import { llmJudge } from './judge.js';
import {
  lengthBudget,
  repetitionPenalty,
  shrinkingBudget,
  softOverlongPunishment,
  ternaryTruthfulness,
} from './length.js';
import { mathAnswer } from './math.js';
import { bleu, charF1, rougeL } from './similarity.js';
import { sqlExecution } from './sql.js';
import { sqlNgram, sqlSchemaLinking, sqlSyntax } from './sql-partial.js';
import { rankingNdcg, rankingRecall, scoreDistribution } from './ranking.js';
import { graphSolution } from './graph-problems.js';
import { stlPropositions, stlSuccinctness, stlSymbols, stlTemplatedNl, stlTraceAgreement } from './stl.js';
import { verilogFormat, verilogStructure, verilogTestbench } from './verilog.js';
import { isGroupReward, type Reward, type RewardColumn, type RewardFn } from './types.js';
import { boxIou, countAnswer } from './visual.js';
import { createRewardFactoryRegistry, define, optionColumn, type RewardFactory } from './factory-registry.js';
import { applicationRewardFactories } from './application-factories.js';
import { maskIouFactory } from './mask-iou.js';
import { numericAnswerFactory } from './numeric-answer.js';
import { cermFactory } from './cerm.js';
import { temporalFormatFactory, temporalIouFactory } from './temporal-grounding.js';
import { pointInBoxFactory } from './point-in-box.js';
import { thinkAnswerConsistencyFactory } from './think-answer-consistency.js';
import { smartSearchFactory } from './smartsearch.js';
import { transformationCreditFactory } from './transformation-credit.js';
import { outcomeGatedProcessFactory } from './posterior-gated.js';
import { refineTrustFactory } from './refine-trust.js';
import { masaFactory } from './masa.js';
import { grpoLambdaFactory } from './grpo-lambda.js';
import { stepCountFactory } from './step-count.js';

const column = z.string().min(1);
const tagName = z.string().regex(/^[\w-]+$/, 'a tag name: letters, digits, _ or -');
const rankingInput = { relevanceColumn: column.optional(), tag: z.union([tagName, z.literal('')]).optional() };
const stlInput = { goldColumn: column.optional(), tag: z.union([tagName, z.literal('')]).optional() };
const restl = (aspect: string) =>
  `RESTL (#145) ${aspect} reward: the paper's metric, which its trained reward model learns (arXiv 2511.08555; docs/paper-recipes.md)`;
const unit = z.enum(['tokens', 'characters']);
const language = z.enum(['python', 'javascript']);
const judgeEndpoint = {
  baseUrl: z.string().optional(),
  model: z.string().optional(),
  apiKeyEnv: z.string().optional(),
  maxAttempts: z.number().int().positive().optional(),
  backoffMs: z.number().nonnegative().optional(),
  requestTimeoutMs: z.number().positive().optional(),
  temperature: z.number().optional(),
  maxTokens: z.number().int().positive().optional(),
};

/** The built-in reward factories, by kebab-case name. */
export const rewardFactories = createRewardFactoryRegistry();

/** The vote rewards' options: the `math-answer` extraction and comparison knobs, no answer column. */
const voteOptions = z
  .object({
    targets: z
      .array(z.enum(['boxed', 'marker', 'latex', 'number']))
      .min(1)
      .optional(),
    requireBoxed: z.boolean().optional(),
    precision: z.number().int().min(1).max(15).optional(),
    percentAsFraction: z.boolean().optional(),
    allowSetRelationComparison: z.boolean().optional(),
  })
  .strict();

const builtIns: RewardFactory[] = [
  define(
    'math-answer',
    'final answer (\\boxed, ####, "the answer is", last LaTeX span or number) equals the gold answer by value or symbolically: 1/0',
    'DeepSeekMath; Math-Verify; ALGORITHMS.md §5.3',
    z
      .object({
        answerColumn: column.optional(),
        correct: z.number().optional(),
        wrong: z.number().optional(),
        targets: z
          .array(z.enum(['boxed', 'marker', 'latex', 'number']))
          .min(1)
          .optional(),
        requireBoxed: z.boolean().optional(),
        precision: z.number().int().min(1).max(15).optional(),
        percentAsFraction: z.boolean().optional(),
        allowSetRelationComparison: z.boolean().optional(),
      })
      .strict(),
    mathAnswer,
    { answerColumn: 'answer' },
  ),
  define(
    'think-format',
    '<think>…</think> then the answer, one think block: 1/0',
    'open-r1 format reward; ALGORITHMS.md §5.2',
    z.object({}).strict(),
    () => thinkFormat(),
  ),
  define(
    'tag-format',
    'the given tags each once, in order (default think, answer): 1/0',
    'open-r1 / DeepSeek-R1 template',
    z.object({ tags: z.array(z.string()).optional(), allowOutside: z.boolean().optional() }).strict(),
    tagFormat,
  ),
  define(
    'regex',
    'completion matches a regular expression: 1/0',
    'TRL reward examples',
    z.object({ pattern: z.string(), flags: z.string().optional() }).strict(),
    regexMatch,
  ),
  define(
    'required-sections',
    'fraction of required section strings present',
    'format rewards (#12, #16)',
    z.object({ sections: z.array(z.string()).min(1) }).strict(),
    requiredSections,
  ),
  define(
    'json-valid',
    'completion (or its ```json block) parses as JSON: 1/0',
    'structured-output rewards',
    z.object({}).strict(),
    () => jsonValid(),
  ),
  define(
    'json-schema',
    'JSON conforms to a JSON Schema (ajv): 1, parses only: validJsonScore, else 0',
    'structured-output rewards; ajv',
    z
      .object({
        schema: z.record(z.string(), z.unknown()).optional(),
        schemaColumn: column.optional(),
        validJsonScore: z.number().optional(),
      })
      .strict(),
    jsonSchema,
    (options) => (options.schema ? [] : [optionColumn(options, 'schemaColumn', 'schema')]),
  ),
  define(
    'exact-match',
    'normalised completion (or <tag> content) equals the answer column: 1/0',
    'SQuAD exact match',
    z
      .object({ answerColumn: column.optional(), normalise: z.boolean().optional(), tag: z.string().optional() })
      .strict(),
    exactMatch,
    { answerColumn: 'answer' },
  ),
  define(
    'multiple-choice',
    'chosen option letter (in <answer> when present) equals the answer letter: 1/0',
    'multiple-choice QA rewards',
    z.object({ answerColumn: column.optional(), letters: z.string().min(1).optional() }).strict(),
    multipleChoice,
    { answerColumn: 'answer' },
  ),
  define(
    'box-iou',
    "IoU of the answer's last [x1, y1, x2, y2] with the row's box in [0, 1]; with threshold, grounding accuracy 1/0",
    'VLM-R1 REC reward (IoU > 0.5); R1-V',
    z.object({ boxColumn: column.optional(), threshold: z.number().gt(0).max(1).optional() }).strict(),
    boxIou,
    { boxColumn: 'box' },
  ),
  define(
    'count-answer',
    "the answer's final whole number (digits or zero–twenty, <answer> first) equals the row's count: 1/0",
    'R1-V counting accuracy reward (CLEVR)',
    z.object({ answerColumn: column.optional() }).strict(),
    countAnswer,
    { answerColumn: 'answer' },
  ),
  define(
    'soft-overlong',
    'DAPO soft overlong punishment: 0, then a ramp to −1 over the last cacheLength',
    'DAPO Eq. 13; TRL get_soft_overlong_punishment; ALGORITHMS.md §5.4',
    z
      .object({
        maxLength: z.number().int().positive().optional(),
        cacheLength: z.number().int().positive().optional(),
        unit: unit.optional(),
      })
      .strict(),
    softOverlongPunishment,
  ),
  define(
    'length-budget',
    'length within the budget B(t) = max(1, budget·decayFactor^⌊t/decayEvery⌋) at GRPO step t (fixed without decay): 1/0',
    'Train-Long-Think-Short, Hammoud et al. 2025, arXiv 2508.08940 (#243); ALGORITHMS.md §5.5',
    z
      .object({
        budget: z.number().positive(),
        decayFactor: z.number().gt(0).max(1).optional(),
        decayEvery: z.number().int().positive().optional(),
        unit: unit.optional(),
      })
      .strict()
      .refine((options) => (options.decayFactor === undefined) === (options.decayEvery === undefined), {
        message: 'decayFactor and decayEvery go together (the budget shrinks by decayFactor every decayEvery steps)',
        path: ['decayFactor'],
      }),
    ({ budget, decayFactor, decayEvery, unit }) =>
      lengthBudget({
        budget: decayFactor === undefined ? budget : shrinkingBudget(budget, decayFactor, decayEvery!),
        unit,
      }),
  ),
  define(
    'repetition-penalty',
    'maxPenalty·(1 − distinct/total n-grams), ≤ 0',
    'open-r1 repetition penalty; ALGORITHMS.md §5.5',
    z
      .object({
        ngramSize: z.number().int().positive().optional(),
        maxPenalty: z.number().max(0).optional(),
        unit: z.enum(['words', 'tokens']).optional(),
      })
      .strict(),
    repetitionPenalty,
  ),
  define(
    'ternary-truthfulness',
    '+1 correct, 0 abstain ("I don\'t know"), −1 wrong',
    'TruthRL, Wei et al. 2025, arXiv 2509.25760 (#61); ALGORITHMS.md §5.3',
    z.object({ answerColumn: column.optional() }).strict(),
    ternaryTruthfulness,
    { answerColumn: 'answer' },
  ),
  define(
    'length-among-correct',
    "group: 1[correct]·(1 − α·length among correct peers) once τ of the group is correct; correct: the run's task check, else math-answer",
    'GRPO-λ (#30); ALGORITHMS.md §5.5',
    z
      .object({
        answerColumn: column.optional(),
        alpha: z.number().optional(),
        minCorrectFraction: z.number().min(0).max(1).optional(),
        unit: unit.optional(),
      })
      .strict(),
    ({ answerColumn, ...rest }, { taskCorrectness }) =>
      lengthAmongCorrect({
        correctness: answerColumn === undefined && taskCorrectness ? taskCorrectness : mathAnswer({ answerColumn }),
        ...rest,
      }),
    (options, { taskCorrectness }) =>
      options.answerColumn === undefined && taskCorrectness ? [] : [optionColumn(options, 'answerColumn', 'answer')],
  ),
  define(
    'majority-vote',
    "group, label-free: 1 when the final answer matches the group's most common one (the pseudo-label), else 0; no answer 0",
    'TTRL, Zuo et al. 2025, arXiv 2504.16084 (PRIME-RL/TTRL ttrl_utils.py); papers.tsv 136',
    voteOptions,
    majorityVote,
  ),
  define(
    'co-reward',
    "step, label-free: 1 when the final answer matches the majority answer of the rephrased question's group (rows sharing pairColumn, default pair_id; draw them together with grpo.drawTogether), else 0",
    'Co-Reward, Zhang et al. 2025, arXiv 2508.00410 (resistzzz/Co-Reward co_reward.py); papers.tsv 94',
    voteOptions.extend({ pairColumn: column.optional() }).strict(),
    coReward,
    { pairColumn: 'pair_id' },
  ),
  define(
    'scope',
    "step, label-free: 1 when the final answer matches its subgroup's pseudo-label, a vote weighted by step-wise confidence (mean −log π per blank-line step), the subgroup size picked per step on the Pareto front of reward rate and label diversity",
    'SCOPE, Wang et al. 2025, arXiv 2512.15146 (szu-tera/SCOPE grouputils.py, myutils.py, ray_trainer.py); papers.tsv 136',
    voteOptions
      .extend({
        votesPerSubgroup: z.number().int().positive().optional(),
        lambda: z.number().min(0).max(1).optional(),
        stepSeparator: z.string().min(1).optional(),
        seed: z.number().int().nonnegative().optional(),
      })
      .strict(),
    scopeReward,
  ),
  define(
    'vote-frequency',
    'group, label-free: the share of the group whose final answer matches this one; no answer 0',
    'TTRV frequency reward, papers.tsv 64',
    voteOptions,
    voteFrequency,
  ),
  define(
    'ttrv',
    "group, label-free: the share of the group giving this answer − w·(entropy of the group's answers / log distinct answers), w = 0.75; no answer is one more answer",
    'TTRV, Singh et al. 2025, arXiv 2510.06783 (Akshit21112002/TTRV ttt_metrics.py rewards_en); papers.tsv 64',
    voteOptions.extend({ entropyWeight: z.number().finite().min(0).optional() }).strict(),
    ttrvReward,
  ),
  define(
    'unlikeliness',
    "group, needs the policy logprobs (not served by grpo serve-rewards): R·(1 − β·rank/G), R a correctness reward by name (default the run's task check, else math-answer), rank of the mean token logprob in the group, 0 = least likely",
    'Rewarding the Unlikely, He et al. 2025, arXiv 2506.02355 (AndreHe02/rewarding-unlikely-release); papers.tsv 251',
    z
      .object({
        answerColumn: column.optional(),
        correctness: z
          .object({ name: z.string(), options: z.record(z.string(), z.unknown()).optional() })
          .strict()
          .optional(),
        rankPenalty: z.number().min(0).optional(),
      })
      .strict(),
    ({ answerColumn, correctness, rankPenalty }, { taskCorrectness }) =>
      unlikeliness({
        correctness: perCompletionCheck('unlikeliness', correctness, answerColumn, taskCorrectness),
        rankPenalty,
      }),
    ({ answerColumn, correctness }, { taskCorrectness }) =>
      checkColumns(correctness, { name: 'math-answer' }, answerColumn, taskCorrectness),
  ),
  define(
    'negative-surprisal',
    'label-free, needs the policy logprobs (not served by grpo serve-rewards): the mean log π of the completion tokens, ≤ 0 (low output entropy)',
    'issue 31 low-output-entropy reward; one-sample estimate of minus the token entropy',
    z.object({}).strict(),
    negativeSurprisal,
  ),
  define(
    'self-aligned',
    "label-free, needs the policy (grpo train only): SAR, max((ppl(a) − ppl(a|q))/ppl(a), −1), the completion's perplexity without its question (system prompt, empty user turn) against with it; weight it beside the verifiable reward (the authors: 0.2)",
    'SAR, Han et al. 2025, arXiv 2509.05489 (amazon-science/Self-Aligned-Reward-Towards_Effective_and_Efficient_Reasoners); papers.tsv 153',
    z.object({}).strict(),
    selfAlignedReward,
  ),
  {
    ...define(
      'tool-efficiency',
      "group: α·r_tool(m, n)·correctness (a reward by name; default the run's task check, else exact-match on <answer>), r_tool peaking at the optimal tool-call count n",
      'OTC-PO, Wang et al. 2025, arXiv 2504.14870; docs/turn-credit.md §5',
      z
        .object({
          answerColumn: column.optional(),
          correctness: z
            .object({ name: z.string(), options: z.record(z.string(), z.unknown()).optional() })
            .strict()
            .optional(),
          mode: z.enum(['grpo', 'ppo']).optional(),
          smoothing: z.number().positive().optional(),
          alpha: z.number().optional(),
        })
        .strict(),
      ({ answerColumn, correctness, ...rest }, { taskCorrectness }) =>
        toolEfficiency({ correctness: toolCorrectness(correctness, answerColumn, taskCorrectness), ...rest }),
      ({ answerColumn, correctness }, { taskCorrectness }) =>
        checkColumns(correctness, { name: 'exact-match', options: { tag: 'answer' } }, answerColumn, taskCorrectness),
    ),
    needsToolCalls: true,
  },
  define(
    'bleu',
    'group-vectorised per-sentence BLEU against a reference column (words or token ids)',
    'TensorBLEU, Filipek 2025, arXiv 2510.05485 (#80; RxAI-dev/rxlm tensor_sentence_bleu); Papineni et al. 2002; ALGORITHMS.md §5.9',
    z
      .object({
        referenceColumn: column.optional(),
        unit: z.enum(['words', 'ids']).optional(),
        maxOrder: z.number().int().positive().optional(),
        smoothing: z.enum(['none', 'floor', 'add-k', 'exp']).optional(),
        epsilon: z.number().positive().optional(),
        k: z.number().positive().optional(),
      })
      .strict(),
    bleu,
    { referenceColumn: 'reference' },
  ),
  define(
    'rouge-l',
    'ROUGE-L F-measure (word LCS) against a reference column',
    'Lin 2004',
    z.object({ referenceColumn: column.optional(), beta: z.number().positive().optional() }).strict(),
    rougeL,
    { referenceColumn: 'reference' },
  ),
  define(
    'char-f1',
    'character multiset F1 against a reference column',
    'SQuAD F1 at character level',
    z.object({ referenceColumn: column.optional() }).strict(),
    charF1,
    { referenceColumn: 'reference' },
  ),
  define(
    'code-tests',
    "fraction of the row's tests the completion's code passes, run in the sandbox",
    'HumanEval / MBPP execution rewards',
    z
      .object({
        language: language.optional(),
        testsColumn: column.optional(),
        setupColumn: column.optional(),
        prefixColumn: column.optional(),
        timeoutMs: z.number().positive().optional(),
        memoryMb: z.number().positive().optional(),
      })
      .strict(),
    codeTests,
    { testsColumn: 'tests' }, // setupColumn and prefixColumn are read only when named, and may be missing
  ),
  define(
    'equation',
    "final expression uses exactly the row's numbers once each with + − × ÷ ( ) and equals the target: 1/0",
    'Countdown (TinyZero, d1); Game of 24 (Tree of Thoughts)',
    z.object({ numbersColumn: column.optional(), targetColumn: column.optional() }).strict(),
    equationAnswer,
    { numbersColumn: 'numbers', targetColumn: 'target' },
  ),
  define(
    'sql-execution',
    "predicted SQL returns the gold query's rows on SQLite: 1, runs only: executesScore, else 0",
    'Reasoning-SQL (#33)',
    z
      .object({
        goldColumn: column.optional(),
        databaseColumn: column.optional(),
        executesScore: z.number().optional(),
        order: z.enum(['auto', 'ordered', 'unordered']).optional(),
        tag: tagName.optional(),
        timeoutMs: z.number().positive().optional(),
        maxRows: z.number().int().positive().optional(),
      })
      .strict(),
    sqlExecution,
    { databaseColumn: 'schema', goldColumn: 'answer' },
  ),
  define(
    'sql-syntax',
    "predicted SQL runs on the row's SQLite database (no error): 1, else 0",
    'Reasoning-SQL (#33) syntax-check reward',
    z
      .object({
        databaseColumn: column.optional(),
        tag: tagName.optional(),
        timeoutMs: z.number().positive().optional(),
      })
      .strict(),
    sqlSyntax,
    { databaseColumn: 'schema' },
  ),
  define(
    'sql-schema-linking',
    'Jaccard similarity of the table/column names the predicted and gold SQL use, in [0, 1]',
    'Reasoning-SQL (#33) schema-linking reward',
    z
      .object({
        goldColumn: column.optional(),
        databaseColumn: column.optional(),
        tag: tagName.optional(),
        timeoutMs: z.number().positive().optional(),
      })
      .strict(),
    sqlSchemaLinking,
    { databaseColumn: 'schema', goldColumn: 'answer' },
  ),
  define(
    'sql-ngram',
    'Jaccard similarity of the predicted and gold SQL token n-gram sets (n = 2), in [0, 1]',
    'Reasoning-SQL (#33) n-gram similarity reward',
    z
      .object({ goldColumn: column.optional(), tag: tagName.optional(), n: z.number().int().min(1).max(8).optional() })
      .strict(),
    sqlNgram,
    { goldColumn: 'answer' },
  ),
  define(
    'verilog-testbench',
    "VeriReason's tiered testbench reward (iverilog + vvp in the sandbox): 0 not compiling, 2.1 passing ≥ 99% of checks, else 0.1 + structure similarity to the gold module; scoring pass-fraction: passed / all checks",
    'VeriReason (#1) verilog_reward, github.com/NellyW8/VeriReason GRPO/verilog_rewards_tb.py; VERIRL (#121) per-case testbenches (docs/paper-recipes.md)',
    z
      .object({
        scoring: z.enum(['verireason', 'pass-fraction']).optional(),
        passThreshold: z.number().min(0).max(1).optional(),
        passReward: z.number().finite().optional(),
        compileReward: z.number().finite().optional(),
        structureWeight: z.number().min(0).finite().optional(),
        goldColumn: column.optional(),
        testbenchColumn: column.optional(),
        timeoutMs: z.number().positive().optional(),
        memoryMb: z.number().positive().optional(),
      })
      .strict(),
    verilogTestbench,
    // The gold module is read for the structure score of a design that compiles and fails the bench.
    (options) => [
      optionColumn(options, 'testbenchColumn', 'testbench'),
      ...(options.scoring !== 'pass-fraction' && (options.structureWeight ?? 1) > 0
        ? [optionColumn(options, 'goldColumn', 'answer')]
        : []),
    ],
  ),
  define(
    'verilog-structure',
    "VeriReason's structure score against the gold module: clamp(0.7·sequence ratio + 0.3·coverage − 0.2·redundancy of structural statements), in [0, 1]",
    'VeriReason (#1) run_ast_comparison, github.com/NellyW8/VeriReason GRPO/verilog_rewards_tb.py (docs/paper-recipes.md)',
    z.object({ goldColumn: column.optional() }).strict(),
    verilogStructure,
    { goldColumn: 'answer' },
  ),
  define(
    'verilog-format',
    "style think-answer (default): <think>…</think><answer>```verilog …```</answer>: 1/0; style module: exactly one module NAME(ports) ... endmodule with the row's name and ports in order: 1/0",
    'VeriReason (#1) verilog_format_reward, github.com/NellyW8/VeriReason GRPO/verilog_rewards_tb.py; style module is ours (docs/paper-recipes.md)',
    z
      .object({
        style: z.enum(['think-answer', 'module']).optional(),
        moduleColumn: column.optional(),
        portsColumn: column.optional(),
      })
      .strict(),
    verilogFormat,
    (options) =>
      options.style === 'module'
        ? [optionColumn(options, 'moduleColumn', 'module'), optionColumn(options, 'portsColumn', 'ports')]
        : [],
  ),
  define(
    'ranking-ndcg',
    'NDCG@k of the order the per-document scores in <answer> induce, against graded relevance (ties averaged), in [0, 1]',
    'GroupRank (#51) ranking-metric reward; NDCG (Järvelin & Kekäläinen 2002)',
    z
      .object({
        ...rankingInput,
        k: z.number().int().positive().optional(),
        gain: z.enum(['exponential', 'linear']).optional(),
      })
      .strict(),
    rankingNdcg,
    { relevanceColumn: 'relevance' },
  ),
  define(
    'ranking-recall',
    'recall@k of the relevant documents under the per-document scores in <answer> (ties averaged), in [0, 1]',
    'GroupRank (#51) ranking-metric reward (Recall)',
    z
      .object({
        ...rankingInput,
        k: z.number().int().positive().optional(),
        relevantFrom: z.number().nonnegative().optional(),
      })
      .strict(),
    rankingRecall,
    { relevanceColumn: 'relevance' },
  ),
  define(
    'score-distribution',
    '1 − mean |score − gold grade| / maxScore over the documents, in [0, 1]',
    'GroupRank (#51) distribution reward (substitute form, docs/paper-recipes.md)',
    z.object({ ...rankingInput, maxScore: z.number().positive() }).strict(),
    scoreDistribution,
    { relevanceColumn: 'relevance' },
  ),
  define(
    'graph-solution',
    'graph problem answer [A, C, D] checked exactly: optimum → 2, feasible → 0.5·opt/value (TSP: 0.5·(opt/value)²), missing or infeasible → −1; row columns problem, graph, optimum (source, target)',
    'Graph-R1 (#178) graph_reward, github.com/Graph-Reasoner/Graph-R1 verl/utils/reward_score/grapharena_norepeat.py (docs/paper-recipes.md)',
    z
      .object({
        exactScore: z.number().optional(),
        partialScale: z.number().nonnegative().optional(),
        tspExponent: z.number().positive().optional(),
        invalidScore: z.number().optional(),
        problemColumn: column.optional(),
        optimumColumn: column.optional(),
      })
      .strict(),
    graphSolution,
    // source and target are read only on distance rows.
    (options) => [
      optionColumn(options, 'problemColumn', 'problem'),
      { column: 'graph' },
      optionColumn(options, 'optimumColumn', 'optimum'),
    ],
  ),
  define(
    'stl-propositions',
    "F1 (score: gold-recall, RESTL's m_a: the share of gold atoms) between the atomic propositions (x>3) of the predicted and gold STL formulas; 0 when it does not parse",
    restl('atomic proposition consistency'),
    z.object({ ...stlInput, score: z.enum(['f1', 'gold-recall']).optional() }).strict(),
    stlPropositions,
    { goldColumn: 'answer' },
  ),
  define(
    'stl-templated-nl',
    "the predicted STL formula rendered to templated English, ROUGE-L F1 against the row's sentence (column nl)",
    "RESTL (#145) templated NL similarity reward: its m_t is a BERT-like encoder's cosine, ROUGE-L stands in (arXiv 2511.08555; docs/paper-recipes.md)",
    z.object({ ...stlInput, textColumn: column.optional() }).strict(),
    stlTemplatedNl,
    { goldColumn: 'answer', textColumn: 'nl' },
  ),
  define(
    'stl-succinctness',
    "min(1, size of gold / size of predicted STL formula) in operators and atoms (measure: characters, RESTL's m_l = 1 − ||y*| − |ŷ|| / |y*|)",
    restl('formula succinctness'),
    z.object({ ...stlInput, measure: z.enum(['size', 'characters']).optional() }).strict(),
    stlSuccinctness,
    { goldColumn: 'answer' },
  ),
  define(
    'stl-symbols',
    "F1 over the tokens of the predicted and gold STL formulas, canonically printed (measure: rouge-l, RESTL's m_s: ROUGE-L F1 of the tokens as written)",
    restl('STL-level symbol matching'),
    z.object({ ...stlInput, measure: z.enum(['token-f1', 'rouge-l']).optional() }).strict(),
    stlSymbols,
    { goldColumn: 'answer' },
  ),
  define(
    'stl-traces',
    'fraction of generated traces on which the predicted and gold STL formulas agree on satisfaction (robustness > 0)',
    'RESTL (#145) companion: a semantic check by STL robustness (Donzé & Maler 2010) on random traces, ours (docs/paper-recipes.md)',
    z
      .object({
        ...stlInput,
        traces: z.number().int().positive().max(10_000).optional(),
        seed: z.number().int().optional(),
      })
      .strict(),
    stlTraceAgreement,
    { goldColumn: 'answer' },
  ),
  define(
    'llm-judge',
    'LLM judge over an OpenAI-compatible endpoint: rubric score, YES/NO or weighted criteria, in [0, 1]',
    'rubric rewards (#37, #82, #109); ALGORITHMS.md §5.11',
    z
      .object({
        ...judgeEndpoint,
        rubric: z.string().optional(),
        mode: z.enum(['score', 'yes-no', 'criteria']).optional(),
        min: z.number().optional(),
        max: z.number().optional(),
        criteria: z
          .array(z.object({ description: z.string(), weight: z.number().positive().optional() }).strict())
          .optional(),
        referenceColumn: column.optional(),
        cacheSize: z.number().int().positive().optional(),
      })
      .strict(),
    llmJudge,
    (options) => (options.referenceColumn ? [{ column: options.referenceColumn, option: 'referenceColumn' }] : []),
  ),
];
for (const factory of [...builtIns, ...applicationRewardFactories(createReward)]) rewardFactories.register(factory);
// Vision answer rewards, each with its entry in its own file (docs/vision.md).
const visionAnswers = [numericAnswerFactory, pointInBoxFactory, maskIouFactory, transformationCreditFactory];
for (const factory of [
  ...visionAnswers,
  thinkAnswerConsistencyFactory(createReward, columnsOfReward),
  smartSearchFactory(createReward, columnsOfReward),
])
  rewardFactories.register(factory);
// Reward-design papers of issue 31, each with its entry in its own file (docs/algorithms.md).
for (const factory of [
  outcomeGatedProcessFactory(createReward, columnsOfReward),
  refineTrustFactory(createReward, columnsOfReward),
  masaFactory(createReward, columnsOfReward),
  grpoLambdaFactory(createReward, columnsOfReward),
  stepCountFactory,
])
  rewardFactories.register(factory);
// BigCharts-R1's chart reward (docs/vision.md).
rewardFactories.register(cermFactory);
// TempSamp-R1's temporal grounding rewards (docs/rewards.md).
rewardFactories.register(temporalIouFactory);
rewardFactories.register(temporalFormatFactory);

/**
 * tool-efficiency's r_φ: the check named by `choice`; unnamed, the run's task check when training
 * (`taskCorrectness`: a recipe's answer format, e.g. search-agent's text after the last "A:", is its
 * own), else `exact-match` on the `<answer>` content (the whole completion without one), normalised
 * as SQuAD / Search-R1's `em_check` (lower case, no punctuation, no articles), so text answers
 * ("Oslo") score; `answerColumn`, when given, joins the check's options (and picks the named check).
 */
function toolCorrectness(
  choice: { name: string; options?: Record<string, unknown> } | undefined,
  answerColumn: string | undefined,
  taskCorrectness: RewardFn | undefined,
): RewardFn {
  if (choice === undefined && answerColumn === undefined && taskCorrectness) return taskCorrectness;
  const { name, options } = choice ?? { name: 'exact-match', options: { tag: 'answer' } };
  const reward = createReward(name, answerColumn === undefined ? options : { answerColumn, ...options });
  if (isGroupReward(reward))
    throw new Error(
      `reward "tool-efficiency": correctness "${name}" is a group reward; the check must score one episode`,
    );
  return reward;
}

/**
 * A per-completion correctness check by name; unnamed, the run's task check when training (a task's
 * answer need not be a number: math-answer would score every text answer 0), else `math-answer`;
 * `answerColumn`, when given, joins the check's options (and picks the named check).
 */
function perCompletionCheck(
  rewardName: string,
  choice: { name: string; options?: Record<string, unknown> } | undefined,
  answerColumn: string | undefined,
  taskCorrectness: RewardFn | undefined,
): RewardFn {
  if (choice === undefined && answerColumn === undefined && taskCorrectness) return taskCorrectness;
  const { name, options } = choice ?? { name: 'math-answer', options: {} };
  const reward = createReward(name, answerColumn === undefined ? options : { answerColumn, ...options });
  if (isGroupReward(reward))
    throw new Error(`reward "${rewardName}": correctness "${name}" is a group reward; it must score one completion`);
  return reward;
}

/** The columns built-in reward `name` needs with these options (its entry's declaration). */
export function columnsOfReward(name: string, options: unknown = {}): RewardColumn[] {
  return rewardFactories.get(name).columns(options);
}

/**
 * The columns of tool-efficiency's and unlikeliness's correctness check, picked as toolCorrectness
 * and perCompletionCheck pick it: none for the run's task check, else the named check's.
 */
function checkColumns(
  choice: { name: string; options?: Record<string, unknown> } | undefined,
  fallback: { name: string; options?: Record<string, unknown> },
  answerColumn: string | undefined,
  taskCorrectness: RewardFn | undefined,
): RewardColumn[] {
  if (choice === undefined && answerColumn === undefined && taskCorrectness) return [];
  const { name, options = {} } = choice ?? fallback;
  const columns = columnsOfReward(name, answerColumn === undefined ? options : { answerColumn, ...options });
  if (choice === undefined) return columns; // the default check's answerColumn is this reward's
  return columns.map(({ column, option }) => ({ column, option: `correctness "${name}"'s ${option ?? 'column'}` }));
}

/**
 * Builds a built-in reward by name; unknown names and bad options throw with the details. A reward
 * that scores a whole step at once (`co-reward`) throws here: it is built by the trainer (setup.ts),
 * never nested in another reward or run on one file's rows.
 */
export function createReward(name: string, options: unknown = {}): Reward {
  const reward = rewardFactories.get(name).create(options);
  if (typeof reward !== 'function' && reward.scope === 'batch')
    throw new Error(`reward "${name}" scores a whole training step at once; use it in grpo train, not here`);
  return reward;
}
