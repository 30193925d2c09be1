/**
 * SmartSearch (#164; Wen, Dong, Dou 2026, "SmartSearch: Process Reward-Guided Query Refinement for
 * Search Agents", arXiv 2601.04888): a search agent trained with process rewards on the quality of
 * each intermediate query. Run: `npx grpo train recipes/papers/smartsearch.ts`.
 *
 * From the paper's text (§4.2, §4.4 Stage 3, Appendix A; its code, github.com/MYVAE/SmartSearch,
 * was not in the code index):
 *   - every search call is scored S_t = novel ∧ useful (`smartSearchEnvironment`): novel when at most
 *     K of its documents have the content of a document an earlier call retrieved (Eq. 8–9), useful
 *     when its intent is necessary and its results answer it (Eq. 10, an LLM judge in the paper);
 *   - the reward is r = r_composite + λ·r_format (Eq. 16) with r_composite = max(1 − γ·n_wrong, φ_min)
 *     for a right answer and min(γ·n_correct, φ_max) for a wrong one (Eq. 17; the `smartsearch`
 *     reward), r_format ∈ {0, 1};
 *   - GRPO with its group z-score (Eq. 2–4), tool results masked out of the loss.
 * The paper gives no values for K, γ, φ_min, φ_max and λ: the ones below are this recipe's.
 * Not here: the query-refinement rollout (a query scored 0 rewritten by LLM_refine and the rest of
 * the episode regenerated from it, up to M trajectories per group), the SFT and DPO stages
 * (Stages 1–2) and the textual explanations T_t that drive the refinement; the usefulness check is
 * a rule, not the paper's distilled Qwen2.5-3B judge — `usefulnessJudge` below sends the paper's
 * scoring prompt to an OpenAI-compatible endpoint instead (docs/paper-recipes.md "SmartSearch").
 *
 * Task (defined here): "When was the actor Mira born?" over a made-up corpus where every name is
 * shared by two people of different trades, so `search Mira` may return the wrong person (the
 * paper's Kevin McCarthy example). The rule for usefulness: the call's results hold the asked
 * person's document. The SFT teacher always answers right but, on `SLOPPY_RATE` of its
 * demonstrations, first searches the bare name (or repeats its query) — queries the process reward
 * scores 0 — so GRPO has low-quality queries to remove.
 *
 * Episode shape (chat template below, Hermes tool calls, a character tokenizer):
 *   Q:When was the actor Mira born?\nA:<tool_call>{"name": "search", "arguments": {"query": "Mira actor"}}</tool_call><eos>\nR:[1] Mira (actor)\nMira the actor was born in 1914.\nA:1914<eos>\n
 */
import {
  chatCompletion,
  generatedSplit,
  searchTool,
  smartSearchEnvironment,
  type Example,
  type JudgeEndpoint,
  type Pick,
  type QueryUsefulnessInput,
  type Recipe,
  type RewardFn,
  type Task,
} from '../../src/index.js';

/** Fraction of SFT demonstrations with a low-quality first query (the bare name, or the query twice). */
const SLOPPY_RATE = 0.4;

const NAMES = ['Mira', 'Tomas', 'Lena', 'Omar', 'Yuki', 'Ravi', 'Ines', 'Karl', 'Nadia', 'Pablo', 'Sofia', 'Ivan'];
const TRADES = ['actor', 'singer', 'painter', 'pilot'];

/** The two trades of a name and each one's birth year (fixed, from the positions). */
function people(nameIndex: number): { trade: string; year: number }[] {
  const first = nameIndex % TRADES.length;
  const second = (nameIndex + 1 + (nameIndex % 3)) % TRADES.length;
  return [first, second].map((trade, slot) => ({
    trade: TRADES[trade]!,
    year: 1900 + ((nameIndex * 37 + slot * 41 + 11) % 100),
  }));
}

const documentText = (name: string, trade: string, year: number) => `${name} the ${trade} was born in ${year}.`;
const documents = NAMES.flatMap((name, index) =>
  people(index).map(({ trade, year }) => ({ title: `${name} (${trade})`, text: documentText(name, trade, year) })),
);

const search = searchTool({ documents, topK: 1, maxCharactersPerDocument: 60 });
const signal = new AbortController().signal;
const toolCall = (query: string) => `<tool_call>{"name": "search", "arguments": {"query": "${query}"}}</tool_call>`;

function makeRow(pick: Pick): Example {
  const nameIndex = pick(NAMES.length);
  const person = people(nameIndex)[pick(2)]!;
  const name = NAMES[nameIndex]!;
  return {
    prompt: `When was the ${person.trade} ${name} born?`,
    answer: String(person.year),
    name,
    trade: person.trade,
    support: documentText(name, person.trade, person.year),
  };
}

/** The final answer: what follows the last "A:" (the whole completion when there is none). */
const finalAnswer = (completion: string) => (completion.split('A:').at(-1) ?? '').trim();

/** r_format: the episode ends in a bare four-digit year and none of its calls failed to parse or run. */
const format: RewardFn = ({ completion, episode }) =>
  /^\d{4}$/.test(finalAnswer(completion)) && (episode?.toolCalls ?? []).every((call) => call.error === undefined)
    ? 1
    : 0;

/** The recipe's usefulness rule: the call's results hold the asked person's document. */
export const usefulWhenSupported = ({ call, row }: QueryUsefulnessInput): boolean =>
  call.result.includes(String(row.support));

/** The paper's scoring prompt (Appendix A, "Prompt for scoring"), with the search process as <search>/<result> pairs. */
export function usefulnessPrompt({ row, history }: QueryUsefulnessInput): string {
  const context = history
    .map((call) => `<search> ${String(call.arguments.query ?? '')} </search> <result> ${call.result} </result>`)
    .join(' ');
  return [
    "You are a query-evaluation assistant. Your task is to assess the quality of a search agent's query of the current search round according to the user's question, the golden answer and the agent's search process up to the current search round. If the agent's query intent of the current search round is necessary , and the corresponding query result includes the answer for the query, the score for query should be 1. Otherwise, the score for the query should be 0. The details of the assessment are in the Evaluation Guideline, please read it carefully.",
    `### User's question ${String(row.prompt ?? row.question ?? '')}`,
    `### Golden answer ${String(row.answer ?? '')}`,
    `### Agent's search process up to the current search round ${context}`,
    "### Evaluation Guideline\n1. Identify the agent's query intent of the current search round accurately.\n2. The query result doesn't need to solve the user's question directly; but it must include the information that address the agent's query intent completely, related entities alone is not enough.\n3. The intended entity and the one found in the query result must be exactly the same, otherwise, the score should be 0.",
    '### Output Format: <answer> score for the query </answer> <explanation> explanation for the score </explanation>',
  ].join(' ');
}

/** The score in a judge's reply: the 0 or 1 inside <answer>; anything else is refused (and retried). */
export function parseUsefulness(reply: string): number {
  const score = /<answer>\s*([01])\s*<\/answer>/.exec(reply)?.[1];
  if (score === undefined) throw new Error(`no <answer>0|1</answer> in the judge's reply: ${reply.slice(0, 120)}`);
  return Number(score);
}

/** LLM_eval over an OpenAI-compatible endpoint with the paper's prompt (the paper: a distilled Qwen2.5-3B). */
export const usefulnessJudge =
  (endpoint: JudgeEndpoint = {}) =>
  (input: QueryUsefulnessInput): Promise<number> =>
    chatCompletion([{ role: 'user', content: usefulnessPrompt(input) }], parseUsefulness, endpoint);

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}Q:{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  "{% elif message.role == 'tool' %}R:{{ message.content }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

const alphabet = [
  ...new Set(
    `QAR:?\n[]1 .()${toolCall('')}${documents.map((document) => `${document.title}${document.text}`).join('')}When was the born0123456789`,
  ),
].join('');

/** One search turn as the model writes it and the tool answers, then the next "A:". */
const searchTurn = (query: string) => `${toolCall(query)}<eos>\nR:${String(search.run({ query }, { signal }))}\nA:`;

export const task: Task = {
  name: 'ambiguous-birth-years',
  description: 'when was the TRADE NAME born: search a corpus where each name is two people (SmartSearch #164)',
  alphabet,
  trainExamples: (count, seed) => generatedSplit('ambiguous-birth-years', count, seed, false, makeRow),
  evalExamples: (count, seed) => generatedSplit('ambiguous-birth-years', count, seed, true, makeRow),
  demonstration(row, draw) {
    const good = `${String(row.name)} ${String(row.trade)}`;
    if (draw() >= SLOPPY_RATE) return `${searchTurn(good)}${String(row.answer)}`;
    // A low-quality first query: the bare name (may find the other person), or the good one twice.
    const first = draw() < 0.5 ? String(row.name) : good;
    return `${searchTurn(first)}${searchTurn(good)}${String(row.answer)}`;
  },
  rewards: () => [{ name: 'format', reward: format, weight: 1 }],
  isCorrect: (row, completion) => finalAnswer(completion) === row.answer,
};

export default {
  config: {
    task: 'ambiguous-birth-years',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 300, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 96, temperature: 1 },
    grpo: { steps: 30, promptsPerStep: 6, microBatchSize: 48, learningRate: 2e-4 },
    agent: { maxTurns: 3, toolCallFormat: 'hermes', maxEpisodeTokens: 320 },
    // r = r_composite + λ·r_format (Eq. 16): smartsearch with weight 1, the task's format reward with λ = 0.1.
    rewards: [
      { name: 'smartsearch', weight: 1, options: { gamma: 0.2, phiMin: 0.5, phiMax: 0.3 } },
      { name: 'format', weight: 0.1, options: {} },
    ],
    evaluation: { examples: 24 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  environment: smartSearchEnvironment({ search, overlapThreshold: 0, usefulness: usefulWhenSupported }),
} satisfies Recipe;
