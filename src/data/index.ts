/**
 * Public API of the data layer: the Task interface, the built-in tasks by name, dataset readers,
 * the TRL dataset formats (`DataOptions`) and tasks built from dataset files.
 * Is not: anything about tensors or models.
 */
import { loadDatasetTask } from './dataset-task.js';
import { additionTask, type AdditionOptions } from './tasks/addition.js';
import { countdownTask } from './tasks/countdown.js';
import { game24Task } from './tasks/game24.js';
import { gsm8kTask } from './tasks/gsm8k.js';
import { humanevalTask } from './tasks/humaneval.js';
import { math500Task } from './tasks/math500.js';
import { mbppTask } from './tasks/mbpp.js';
import { shapeCountingTask, type ShapeCountingOptions } from './tasks/shape-counting.js';
import { shapeLocatingTask } from './tasks/shape-locating.js';
import { rerankingTask } from './tasks/reranking.js';
import { graphProblemsTask } from './tasks/graph-problems.js';
import { nlToStlTask } from './tasks/nl-to-stl.js';
import { textToSqlTask } from './tasks/text-to-sql.js';
import { verilogTask } from './tasks/verilog.js';
import { multiDomainTask } from './tasks/multi-domain.js';
import { wirelessMathTask } from './tasks/wireless-math.js';
import { promptClassificationTask } from './tasks/prompt-classification.js';
import { paraphraseEvasionTask } from './tasks/paraphrase-evasion.js';
import { drivingPlanningTask } from './tasks/driving-planning.js';
import type { Task } from './task.js';
import type { NamedReward } from '../rewards/types.js';
import { createNamedRegistry } from '../registry/registry.js';

export { parseTaskOptions, type Example, type Task } from './task.js';
export { generatedSplit, textHash, type Pick } from './generated-split.js';
export {
  additionOptionsSchema,
  additionTask,
  isHeldOut,
  withoutCarry,
  type AdditionOptions,
} from './tasks/addition.js';
export { datasetFormatOf, readRowList, readRows, type DatasetRow, type ReadOptions } from './readers.js';
export {
  dataOptionsSchema,
  datasetFormats,
  type DatasetFormat,
  exampleMessages,
  exampleText,
  toExample,
  type ColumnOptions,
  type DataOptions,
} from './examples.js';
export {
  datasetTask,
  loadDatasetTask,
  loadExamples,
  rewardPasses,
  splitExamples,
  type DatasetTaskSpec,
} from './dataset-task.js';
export { fileTaskOptionsShape, type FileTaskOptions } from './tasks/file-task.js';
export { countdownOptionsSchema, countdownTask } from './tasks/countdown.js';
export { game24OptionsSchema, game24Task } from './tasks/game24.js';
export { gsm8kOptionsSchema, gsm8kTask } from './tasks/gsm8k.js';
export { humanevalOptionsSchema, humanevalTask } from './tasks/humaneval.js';
export { math500OptionsSchema, math500Task } from './tasks/math500.js';
export { mbppOptionsSchema, mbppTask } from './tasks/mbpp.js';
export { rerankingOptionsSchema, rerankingTask } from './tasks/reranking.js';
export { graphProblemsOptionsSchema, graphProblemsTask } from './tasks/graph-problems.js';
export { nlToStlOptionsSchema, nlToStlTask } from './tasks/nl-to-stl.js';
export { textToSqlExample, textToSqlOptionsSchema, textToSqlTask } from './tasks/text-to-sql.js';
export { verilogExample, verilogOptionsSchema, verilogTask } from './tasks/verilog.js';
export { multiDomainOptionsSchema, multiDomainTask } from './tasks/multi-domain.js';
export { wirelessMathOptionsSchema, wirelessMathTask } from './tasks/wireless-math.js';
export { promptClassificationOptionsSchema, promptClassificationTask } from './tasks/prompt-classification.js';
export { paraphraseEvasionOptionsSchema, paraphraseEvasionTask } from './tasks/paraphrase-evasion.js';
export { drivingPlanningOptionsSchema, drivingPlanningTask } from './tasks/driving-planning.js';
export { solveArithmetic } from './tasks/arithmetic-solver.js';
export {
  drawShapes,
  shapeCountingOptionsSchema,
  shapeCountingTask,
  type ShapeCountingOptions,
  type TaskImage,
} from './tasks/shape-counting.js';

type TaskFactory = (options: Record<string, unknown>) => Task;
/** What a run may hand a task over data files besides its options: the rewards a recipe brings. */
export interface TaskLoadContext {
  rewards?: NamedReward[];
}
type TaskLoader = (options: Record<string, unknown>, context: TaskLoadContext) => Promise<Task>;

/** A generated task is built synchronously (`create`); a task over data files is loaded (`load`). */
type TaskEntry = { name: string; description: string } & ({ create: TaskFactory } | { load: TaskLoader });

const tasks = createNamedRegistry<TaskEntry>('task');
const builtInTasks: TaskEntry[] = [
  {
    name: 'addition',
    create: (options) => additionTask(options as AdditionOptions),
    description: 'two-digit addition, SFT from a carry-forgetting teacher, GRPO with a verifier',
  },
  {
    name: 'shape-counting',
    create: (options) => shapeCountingTask(options as ShapeCountingOptions),
    description:
      'count coloured shapes in generated images (needs a vision-language model), SFT from a shape-blind teacher, GRPO',
  },
  {
    name: 'shape-locating',
    create: shapeLocatingTask,
    description: 'point at / box / outline a coloured shape in a generated image: point-in-box, box-iou, mask-iou',
  },
  {
    name: 'text-to-sql',
    create: textToSqlTask,
    description:
      'questions over small generated SQLite databases → SQL, execution + partial rewards (Reasoning-SQL #33; recipes/papers/reasoning-sql.ts)',
  },
  {
    name: 'verilog',
    create: verilogTask,
    description:
      'small generated RTL specs → a Verilog module, testbench simulation with iverilog in the sandbox (VeriReason #1, VERIRL #121; recipes/papers/verireason.ts)',
  },
  {
    name: 'reranking',
    create: rerankingTask,
    description:
      'rerank generated word documents: pointwise relevance (ProRank #17) or a score per document of a group (GroupRank #51); recipes/papers/',
  },
  {
    name: 'wireless-math',
    create: wirelessMathTask,
    description:
      'wireless formulas as multiple choice, [MASK] fill-in-the-blank and full equation completion, binary verification (WirelessMathLM #221; recipes/papers/wireless-math.ts)',
  },
  {
    name: 'prompt-classification',
    create: promptClassificationTask,
    description:
      'write a prompt that a frozen bag-of-words model reads well for sentiment, gap reward z-scored per input (RLPrompt #105; recipes/papers/rlprompt.ts)',
  },
  {
    name: 'paraphrase-evasion',
    create: paraphraseEvasionTask,
    description:
      'rewrite a machine-register sentence so a detector ensemble made here misses it while the meaning stays, α·z(1 − p_ens) + β·ROUGE-L (StealthRL #34; recipes/papers/stealthrl.ts)',
  },
  {
    name: 'driving-planning',
    create: drivingPlanningTask,
    description:
      'plan SPEED and PATH meta-actions for a driving scene told in text; F1 × action weight ± group diversity, format (AlphaDrive #69; recipes/papers/alphadrive.ts)',
  },
  {
    name: 'multi-domain',
    create: (options) => multiDomainTask(options, (name, inner) => taskRegistry.get(name)(inner)),
    description:
      'generated tasks mixed in one run, rows tagged by domain, per-domain rewards and metrics (Guru #108; recipes/papers/guru.ts)',
  },
  {
    name: 'graph-problems',
    create: graphProblemsTask,
    description:
      'NP-hard graph problems on small generated graphs (shortest path, TSP, vertex cover, colouring), exact optima (Graph-R1 #178; recipes/papers/graph-r1.ts)',
  },
  {
    name: 'nl-to-stl',
    create: nlToStlTask,
    description:
      'templated English requirements over signals → an STL formula, multi-aspect rewards (RESTL #145; recipes/papers/restl.ts)',
  },
  {
    name: 'dataset',
    load: (options, context) => loadDatasetTask(options, 'dataset', context.rewards),
    description:
      "your data: JSONL/JSON/CSV/TSV/Parquet files in TRL's formats, rewards by name (taskOptions = DataOptions)",
  },
  { name: 'gsm8k', load: gsm8kTask, description: 'GSM8K word problems (data file), math-answer reward' },
  { name: 'math500', load: math500Task, description: 'MATH-500 competition problems (data file), math-answer reward' },
  {
    name: 'countdown',
    load: countdownTask,
    description: 'Countdown, three numbers to a target (data file), equation reward',
  },
  { name: 'game24', load: game24Task, description: 'Game of 24 (data file), equation reward' },
  { name: 'mbpp', load: mbppTask, description: 'MBPP Python problems (data file), code-tests reward in the sandbox' },
  {
    name: 'humaneval',
    load: humanevalTask,
    description: 'HumanEval Python completion (data file), code-tests reward in the sandbox',
  },
];
for (const task of builtInTasks) tasks.add(task);

function entryOf(name: string): TaskEntry {
  return tasks.entry(name);
}

/** Built-in tasks by name; an unknown name lists the known ones. */
export const taskRegistry = {
  names: (): string[] => tasks.names(),
  /** The synchronous factory of a generated task; a task over data files throws, pointing to `load`. */
  get(name: string): TaskFactory {
    const entry = entryOf(name);
    if ('create' in entry) return entry.create;
    throw new Error(
      `task "${name}" reads data files and loads asynchronously: use taskRegistry.load("${name}", options)`,
    );
  },
  /** True for a task built synchronously from its options (no data files). */
  isGenerated: (name: string): boolean => 'create' in entryOf(name),
  /** Any task, generated or over data files; options are checked by the task's schema. */
  async load(name: string, options: Record<string, unknown> = {}, context: TaskLoadContext = {}): Promise<Task> {
    const entry = entryOf(name);
    return 'create' in entry ? entry.create(options) : entry.load(options, context);
  },
  list: () => tasks.list().map(({ name, description }) => ({ name, description })),
};
