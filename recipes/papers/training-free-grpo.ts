/**
 * Training-Free GRPO (#195, Cai et al. 2025, arXiv 2510.08191): GRPO's group comparison without
 * weight updates. A frozen policy answers each question G times with an experience library in its
 * prompt; for every group whose rewards are mixed (0 < mean < 1) an LLM summarises each attempt,
 * compares the attempts into a "semantic advantage" (new experiences), proposes ADD / UPDATE /
 * DELETE / NONE operations against the library, and one batch call merges the batch's operations
 * into the revision applied to the library. Run (the policy and the updater are OpenAI-compatible
 * chat endpoints, as in the paper, where both were DeepSeek-V3.1 through its API):
 *
 *   npx tsx recipes/papers/training-free-grpo.ts --data rows.jsonl --reward math-answer \
 *     --base-url https://api.deepseek.com/v1 --model deepseek-chat --api-key-env DEEPSEEK_API_KEY
 *
 * Followed exactly, from the authors' code (TencentCloudADP/youtu-agent at bef6ba5,
 * utu/practice/experience_updater.py, training_free_grpo.py, prompts/practice/{experience,processor}.yaml,
 * configs/practice/math_reasoning.yaml): the four stages and their order; only partially correct
 * groups reach the summaries and the group advantage; `<Experiences>…</Experiences>` is read from
 * the advantage answer; operations are read from the last ```json block; the batch revision is
 * retried 3 times and applied as `_batch_update` does (an entry without content is skipped, UPDATE
 * of an unknown id adds, DELETE removes), then the library is renumbered G0, G1, …; a failed LLM
 * call drops that item, as the authors' `except` does; the question template with the experiences
 * ("[id]. text" lines, "None" when empty); the defaults (1 epoch, batch 50, G = 5, rollout
 * temperature 0.7, one experience per query; evaluation at their agent's temperature 0.3); each
 * epoch shuffled, the rest of a batch dropped; the agent's instructions (`--instructions`) as the
 * system message.
 * The stage prompts ask for the same inputs and output formats as the authors' templates, in
 * shorter words of our own. Is not: their agents' tools (the math agent's Python executor, the web
 * agent's search) — the policy here answers in one turn; nor their result caches and tracing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createReward, makeRewardInput, type ChatMessage, type RewardFn } from '../../src/index.js';

/** An LLM behind a chat interface: messages in, the answer text out. */
export type ChatFn = (messages: ChatMessage[], settings: { temperature?: number }) => Promise<string>;

/** The experience library, in insertion order (a Map: a plain object would put numeric keys first). */
export type Experiences = Map<string, string>;

/** One answered attempt of a question. */
export interface Attempt {
  question: string;
  answer: string;
  /** The prompt the policy saw (the question with the experiences). */
  prompt: string;
  completion: string;
  /** In [0, 1]; 1 = correct. */
  reward: number;
}

/** One proposed or merged change to the library (the authors' JSON objects). */
export interface Operation {
  operation?: string;
  id?: string | null;
  content?: string;
}

/** What the working agent does and what the library should teach it (the authors' two objectives). */
export interface Objectives {
  agentObjective: string;
  learningObjective: string;
}

/** The defaults of configs/practice/math_reasoning.yaml. */
export const MATH_OBJECTIVES: Objectives = {
  agentObjective:
    'input: A math question that could falls into any areas of mathematics\noutput: A step-by-step reasoning process that leads to the final answer',
  learningObjective:
    'Help the agent to improve the solving capability on math questions by extracting general and concise guidelines.',
};

/** The library as the prompts list it: "[id]. text" per line. */
export function formatExperiences(experiences: Experiences): string {
  return [...experiences].map(([id, text]) => `[${id}]. ${text}`).join('\n');
}

/** The question as the policy sees it (processor.yaml PROBLEM_WITH_EXPERIENCE_TEMPLATE). */
export function promptWithExperiences(question: string, experiences: Experiences): string {
  return (
    `Please solve the problem:\n${question}\n\n` +
    'When solving problems, you MUST first carefully read and understand the helpful instructions and experiences:\n' +
    (experiences.size > 0 ? formatExperiences(experiences) : 'None')
  );
}

/** The groups (attempts of one question) whose mean reward is strictly between 0 and 1. */
export function partiallyCorrectGroups(attempts: readonly Attempt[]): Attempt[][] {
  const byQuestion = new Map<string, Attempt[]>();
  for (const attempt of attempts)
    byQuestion.set(attempt.question, [...(byQuestion.get(attempt.question) ?? []), attempt]);
  return [...byQuestion.values()].filter((group) => {
    const mean = group.reduce((sum, attempt) => sum + attempt.reward, 0) / group.length;
    return mean > 0 && mean < 1;
  });
}

/** The JSON after the last ```json fence, up to the next fence (the authors' split). */
export function lastJsonBlock(response: string): unknown {
  return JSON.parse(response.split('```json').at(-1)!.split('```')[0]!);
}

/** Applies a merged revision as `_batch_update` does, then renumbers the library G0, G1, …. */
export function applyRevision(experiences: Experiences, plan: readonly Operation[]): Experiences {
  const revised = new Map(experiences);
  let nextId = experiences.size;
  for (const entry of plan) {
    const operation = entry.operation ?? 'ADD';
    const content = entry.content ?? '';
    const id = entry.id ?? null;
    if (!content) continue;
    if (operation === 'ADD' || (operation === 'UPDATE' && (id === null || !revised.has(id))))
      revised.set(String(nextId++), content);
    else if (operation === 'UPDATE') revised.set(id!, content);
    else if (operation === 'DELETE' && id !== null) revised.delete(id);
  }
  return new Map([...revised.values()].map((text, index) => [`G${index}`, text]));
}

const roleOf = (objectives: Objectives) =>
  'You improve a working agent by extracting experiences from its past attempts; they will be put in its prompt.\n' +
  `<Working Agent Objective>\n${objectives.agentObjective}\n</Working Agent Objective>\n` +
  `<Learning Objective>\n${objectives.learningObjective}\n</Learning Objective>\n`;

const SUMMARY_TASK =
  'Analyse the one trajectory below step by step: what the agent did and why, what it used, what it missed, and its ' +
  'final answer, focusing on what could be improved towards the learning objective. End with Key Findings and Overall Strategies.';

const ADVANTAGE_TASK = (count: number) =>
  'Compare the attempts below (reward 1 is best) against the ground truth: which are good and which bad, and what ' +
  'made the difference. Then write at most ' +
  `${count} general experience(s) for future inputs, framed "When [condition], [strategy]" where a condition is ` +
  'needed, inside <Experiences>...</Experiences>.';

const OPERATIONS_FORMAT =
  'Answer with one JSON array in a ```json block, one object per decision: ' +
  '{"operation": "ADD | UPDATE | DELETE | NONE", "id": "existing id for UPDATE and DELETE, else null", ' +
  '"content": "Experience name: Brief description."}.';

const GROUP_UPDATE_TASK =
  'For each new experience, compare it with the existing ones and choose ADD (new information), UPDATE (refines an ' +
  'existing one: keep its id, merge into one high-level statement), DELETE (an existing one it contradicts or makes ' +
  'obsolete) or NONE (already covered). ' +
  OPERATIONS_FORMAT;

const BATCH_UPDATE_TASK =
  'Merge the batch of proposed operations below into their net effect on the pool: several UPDATEs of one id become ' +
  'one; a DELETE of an id overrides its UPDATEs; similar ADDs become one; resolve conflicts towards the learning ' +
  'objective. ' +
  OPERATIONS_FORMAT;

/** The batch's experiences and operations as `_format_exp_and_ops` lays them out. */
function experiencesAndOperations(experiences: Experiences, operations: readonly Operation[]): string {
  if (operations.length === 0) return 'No batch operations.';
  const parts = [...experiences].map(([id, text]) => {
    const related = operations.filter((operation) => operation.id === id);
    return (
      `Experience ${id}:\nContent: ${text}\n` +
      (related.length > 0
        ? `Related Operations:\n${related.map((operation) => JSON.stringify(operation, null, 2)).join('\n')}`
        : 'No related operations.')
    );
  });
  const unattached = operations.filter((operation) => !operation.id);
  if (unattached.length > 0)
    parts.push(
      `Operations without specific Experience ID:\n${unattached.map((operation) => JSON.stringify(operation, null, 2)).join('\n')}`,
    );
  return parts.join('\n\n');
}

/** Runs `work` over `items`, at most `concurrency` at a time; a throw drops that item (the authors' `except`). */
async function eachDropping<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>) {
  const results: (R | undefined)[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = await work(items[index]!);
      } catch {
        results[index] = undefined;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results.filter((result): result is R => result !== undefined);
}

/** One experience update from a batch of attempts (`ExperienceUpdater.run`): the new library. */
export async function updateExperiences(options: {
  attempts: readonly Attempt[];
  experiences: Experiences;
  llm: ChatFn;
  objectives: Objectives;
  experiencesPerQuery?: number;
  concurrency?: number;
  temperature?: number;
}): Promise<{ experiences: Experiences; operations: Operation[] }> {
  const { llm, objectives, experiences, experiencesPerQuery = 1, concurrency = 16, temperature } = options;
  const ask = (task: string, user: string) =>
    llm(
      [
        { role: 'system', content: `${roleOf(objectives)}\n${task}` },
        { role: 'user', content: user },
      ],
      { temperature },
    );
  // 1. A summary of each attempt of the partially correct groups.
  const summarised = await eachDropping(
    partiallyCorrectGroups(options.attempts).flat(),
    concurrency,
    async (attempt) => {
      const trajectory = JSON.stringify([
        { role: 'user', content: attempt.prompt },
        { role: 'assistant', content: attempt.completion },
      ]);
      const user = `<Working Agent Input>\n${attempt.question}\n</Working Agent Input>\n\n<Ground Truth>\n${attempt.answer}\n</Ground Truth>\n\n<Critique>\n[No critique provided]\n</Critique>\n\n<Trajectory>\n${trajectory}\n</Trajectory>`;
      return { ...attempt, summary: await ask(SUMMARY_TASK, user) };
    },
  );
  // 2. The group's semantic advantage: what the better attempts did, as experiences.
  const groups = partiallyCorrectGroups(summarised) as (Attempt & { summary: string })[][];
  const advantages = await eachDropping(groups, concurrency, async (group) => {
    const attemptsText = group
      .map((attempt, i) => `Attempt ${i + 1} (Reward ${attempt.reward}):\n${attempt.summary}`)
      .join('\n\n');
    const user = `<Working Agent Input>\n${group[0]!.question}\n</Working Agent Input>\n\n<Ground Truth>\n${group[0]!.answer}\n</Ground Truth>\n\n<Trajectories>\n${attemptsText}\n</Trajectories>`;
    const response = await ask(ADVANTAGE_TASK(experiencesPerQuery), user);
    return /<Experiences>\s*([\s\S]*?)\s*<\/Experiences>/i.exec(response)?.[1]?.trim() ?? '';
  });
  // 3. Each group's operations against the library as it is.
  const existing = experiences.size > 0 ? formatExperiences(experiences) : 'None';
  const proposed = await eachDropping(advantages, concurrency, async (newExperiences) => {
    const user = `<Existing Experiences>\n${existing}\n</Existing Experiences>\n\n<New Experiences>\n${newExperiences}\n</New Experiences>`;
    const operations = lastJsonBlock(await ask(GROUP_UPDATE_TASK, user));
    if (!Array.isArray(operations)) throw new Error('not a JSON array');
    return operations as Operation[];
  });
  // 4. The batch's operations merged into one revision (3 tries), applied.
  const operations = proposed.flat();
  let plan: Operation[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const parsed = lastJsonBlock(await ask(BATCH_UPDATE_TASK, experiencesAndOperations(experiences, operations)));
      if (!Array.isArray(parsed)) throw new Error('not a JSON array');
      plan = parsed as Operation[];
      break;
    } catch {
      // the authors print a warning and try again
    }
  }
  return { experiences: applyRevision(experiences, plan), operations };
}

/** A question of the data with its ground truth and the row the reward reads. */
export interface Question {
  question: string;
  answer: string;
  row: Record<string, unknown>;
}

/** What one step (batch) of the practice loop did. */
export interface PracticeStep {
  step: number;
  epoch: number;
  meanReward: number;
  mixedGroups: number;
  operations: number;
  experiences: Record<string, string>;
}

/** G answers per question with the library in the prompt, each scored by `reward` (null counts as 0). */
export async function rollOut(options: {
  questions: readonly Question[];
  experiences: Experiences;
  policy: ChatFn;
  reward: RewardFn;
  groupSize: number;
  temperature: number;
  /** The agent's instructions, sent as the system message (the authors' agent `instructions`). */
  instructions?: string;
  concurrency?: number;
}): Promise<Attempt[]> {
  const jobs = options.questions.flatMap((question) => Array.from({ length: options.groupSize }, () => question));
  const answered: Attempt[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      const { question, answer, row } = jobs[index]!;
      const prompt = promptWithExperiences(question, options.experiences);
      const messages: ChatMessage[] = [{ role: 'user', content: prompt }];
      if (options.instructions) messages.unshift({ role: 'system', content: options.instructions });
      const completion = await options.policy(messages, { temperature: options.temperature });
      const score = await options.reward(makeRewardInput({ prompt: question, completion, row }));
      answered[index] = { question, answer, prompt, completion, reward: score ?? 0 };
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 16, jobs.length) }, worker));
  return answered;
}

/** A deterministic shuffle (the authors shuffle each epoch's data). */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const copy = [...items];
  let state = seed >>> 0 || 1;
  for (let i = copy.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** The practice loop (`TrainingFreeGRPO.practice`): epochs × batches of rollouts and experience updates. */
export async function practice(options: {
  questions: readonly Question[];
  policy: ChatFn;
  llm: ChatFn;
  reward: RewardFn;
  objectives?: Objectives;
  epochs?: number;
  batchSize?: number;
  groupSize?: number;
  rolloutTemperature?: number;
  instructions?: string;
  experiencesPerQuery?: number;
  concurrency?: number;
  seed?: number;
  experiences?: Experiences;
  onStep?: (step: PracticeStep) => void;
}): Promise<{ experiences: Experiences; steps: PracticeStep[] }> {
  const { questions, epochs = 1, batchSize = 50, groupSize = 5, rolloutTemperature = 0.7, seed = 0 } = options;
  if (questions.length < batchSize)
    throw new Error(`batch size ${batchSize} is more than the ${questions.length} question(s) of the data`);
  let experiences = options.experiences ?? new Map<string, string>();
  const steps: PracticeStep[] = [];
  const batches = Math.floor(questions.length / batchSize);
  for (let epoch = 0; epoch < epochs; epoch++) {
    const order = shuffled(questions, seed + epoch);
    for (let batch = 0; batch < batches; batch++) {
      const attempts = await rollOut({
        questions: order.slice(batch * batchSize, (batch + 1) * batchSize),
        experiences,
        policy: options.policy,
        reward: options.reward,
        groupSize,
        temperature: rolloutTemperature,
        instructions: options.instructions,
        concurrency: options.concurrency,
      });
      const update = await updateExperiences({
        attempts,
        experiences,
        llm: options.llm,
        objectives: options.objectives ?? MATH_OBJECTIVES,
        experiencesPerQuery: options.experiencesPerQuery,
        concurrency: options.concurrency,
      });
      experiences = update.experiences;
      const record: PracticeStep = {
        step: steps.length,
        epoch,
        meanReward: attempts.reduce((sum, attempt) => sum + attempt.reward, 0) / attempts.length,
        mixedGroups: partiallyCorrectGroups(attempts).length,
        operations: update.operations.length,
        experiences: Object.fromEntries(experiences),
      };
      steps.push(record);
      options.onStep?.(record);
    }
  }
  return { experiences, steps };
}

/** An OpenAI-compatible chat endpoint (POST {baseUrl}/chat/completions) as a ChatFn. */
export function openAiChat(options: { baseUrl: string; model: string; apiKey?: string; timeoutMs?: number }): ChatFn {
  return async (messages, settings) => {
    const response = await fetch(`${options.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: options.model, messages, temperature: settings.temperature }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${options.baseUrl}: HTTP ${response.status}: ${text.slice(0, 200)}`);
    const content = (JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message
      ?.content;
    if (typeof content !== 'string') throw new Error(`${options.baseUrl}: no choices[0].message.content`);
    return content;
  };
}

const FLAGS = {
  data: { type: 'string' },
  reward: { type: 'string', default: 'math-answer' },
  'reward-options': { type: 'string', default: '{}' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  'api-key-env': { type: 'string' },
  'policy-base-url': { type: 'string' },
  'policy-model': { type: 'string' },
  'eval-data': { type: 'string' },
  epochs: { type: 'string', default: '1' },
  'batch-size': { type: 'string', default: '50' },
  'group-size': { type: 'string', default: '5' },
  'rollout-temperature': { type: 'string', default: '0.7' },
  'eval-temperature': { type: 'string', default: '0.3' },
  instructions: { type: 'string' },
  'experiences-per-query': { type: 'string', default: '1' },
  concurrency: { type: 'string', default: '16' },
  seed: { type: 'string', default: '0' },
  out: { type: 'string', default: 'training-free-grpo.json' },
} as const;

function readQuestions(file: string, flag: string): Question[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`${flag} ${file}: cannot read it (${(error as Error).message})`);
  }
  return text
    .split('\n')
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line.length > 0)
    .map(({ line, number }) => {
      let row: Record<string, unknown>;
      try {
        row = JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`${flag} ${file}:${number}: not a JSON object`);
      }
      if (typeof row?.prompt !== 'string' || (typeof row.answer !== 'string' && typeof row.answer !== 'number'))
        throw new Error(`${flag} ${file}:${number}: needs a string "prompt" and an "answer"`);
      return { question: row.prompt, answer: String(row.answer), row };
    });
}

function positive(values: Record<string, unknown>, flag: string, integer: boolean, zero = false): number {
  const value = Number(values[flag]);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < 0 || (!zero && value === 0))
    throw new Error(
      `--${flag} ${String(values[flag])}: must be a ${integer ? 'whole ' : ''}number ${zero ? '≥ 0' : '> 0'}`,
    );
  return value;
}

/** The command line: checks every flag and file before any call, then practices and writes `--out`. */
export async function main(argv: readonly string[], log: (line: string) => void = console.log): Promise<void> {
  const { values } = parseArgs({ args: [...argv], options: FLAGS, strict: true });
  if (!values.data) throw new Error('--data FILE is required (JSON lines with "prompt" and "answer")');
  if (!values['base-url'])
    throw new Error('--base-url is required (the OpenAI-compatible endpoint of the updater LLM)');
  if (!values.model) throw new Error('--model is required (the updater LLM served at --base-url)');
  const numbers = {
    epochs: positive(values, 'epochs', true),
    batchSize: positive(values, 'batch-size', true),
    groupSize: positive(values, 'group-size', true),
    rolloutTemperature: positive(values, 'rollout-temperature', false, true),
    evalTemperature: positive(values, 'eval-temperature', false, true),
    experiencesPerQuery: positive(values, 'experiences-per-query', true),
    concurrency: positive(values, 'concurrency', true),
    seed: positive(values, 'seed', true, true),
  };
  let rewardOptions: unknown;
  try {
    rewardOptions = JSON.parse(values['reward-options']);
  } catch {
    throw new Error(`--reward-options ${values['reward-options']}: not JSON`);
  }
  const reward = createReward(values.reward, rewardOptions);
  if (typeof reward !== 'function')
    throw new Error(`--reward ${values.reward}: scores a whole group; Training-Free GRPO needs a per-answer reward`);
  const questions = readQuestions(values.data, '--data');
  if (questions.length < numbers.batchSize)
    throw new Error(`--batch-size ${numbers.batchSize}: --data ${values.data} has only ${questions.length} row(s)`);
  const evalQuestions = values['eval-data'] ? readQuestions(values['eval-data'], '--eval-data') : [];
  const apiKey = values['api-key-env'] ? process.env[values['api-key-env']] : undefined;
  if (values['api-key-env'] && !apiKey)
    throw new Error(`--api-key-env ${values['api-key-env']}: that variable is not set`);
  const llm = openAiChat({ baseUrl: values['base-url'], model: values.model, apiKey });
  const policy = openAiChat({
    baseUrl: values['policy-base-url'] ?? values['base-url'],
    model: values['policy-model'] ?? values.model,
    apiKey,
  });
  const accuracy = async (experiences: Experiences) => {
    const attempts = await rollOut({
      questions: evalQuestions,
      experiences,
      policy,
      reward,
      groupSize: 1,
      temperature: numbers.evalTemperature,
      instructions: values.instructions,
      concurrency: numbers.concurrency,
    });
    return attempts.reduce((sum, attempt) => sum + attempt.reward, 0) / attempts.length;
  };
  const before = evalQuestions.length > 0 ? await accuracy(new Map()) : null;
  if (before !== null) log(`eval mean reward without experiences: ${before.toFixed(4)}`);
  const result = await practice({
    questions,
    policy,
    llm,
    reward,
    instructions: values.instructions,
    ...numbers,
    onStep: (step) =>
      log(
        `step ${step.step} (epoch ${step.epoch}): mean reward ${step.meanReward.toFixed(4)}, ${step.mixedGroups} mixed group(s), ${step.operations} operation(s), ${Object.keys(step.experiences).length} experience(s)`,
      ),
  });
  const after = evalQuestions.length > 0 ? await accuracy(result.experiences) : null;
  if (after !== null) log(`eval mean reward with experiences: ${after.toFixed(4)}`);
  const out = resolve(values.out);
  writeFileSync(
    out,
    `${JSON.stringify({ experiences: Object.fromEntries(result.experiences), steps: result.steps, evalBefore: before, evalAfter: after }, null, 2)}\n`,
  );
  log(`experiences written to ${out}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href)
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`training-free-grpo: ${(error as Error).message}`);
    process.exitCode = 1;
  });
