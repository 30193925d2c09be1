/**
 * A search agent from scratch: a small character-level model answers "Where does NAME live?" by
 * searching a local corpus (BM25, the built-in search tool) and copying the city from the result.
 * Run: `npx grpo train recipes/search-agent.ts`.
 *
 * The corpus is made up (40 people, 8 cities), so nothing can be known without searching; the
 * held-out questions ask about people whose facts never appear in a training answer. As in
 * `tool-calculator.ts`, the SFT teacher always answers correctly but searches on only `SEARCH_RATE`
 * of its demonstrations (answering from memory otherwise), and GRPO with the correctness reward has
 * to make searching the habit. Is not: a measured result — this recipe shows the wiring (a search
 * tool over a corpus, observations in the episode, the final answer checked); the numbers the README
 * quotes are `tool-calculator.ts`'s.
 *
 * Episode shape (chat template below, Hermes tool calls, a character tokenizer):
 *   Q:Where does Mira live?\nA:<tool_call>{"name": "search", "arguments": {"query": "Mira"}}</tool_call><eos>\nR:[1] Mira\nMira lives in Oslo.\nA:Oslo<eos>\n
 */
import { searchTool, toolUseEnvironment, type Example, type Recipe, type RewardFn, type Task } from '../src/index.js';

/** Fraction of SFT demonstrations that search. */
const SEARCH_RATE = 0.3;

const NAMES = [
  'Mira',
  'Tomas',
  'Lena',
  'Omar',
  'Yuki',
  'Ravi',
  'Ines',
  'Karl',
  'Nadia',
  'Pablo',
  'Sofia',
  'Ivan',
  'Amara',
  'Jonas',
  'Leila',
  'Marco',
  'Hana',
  'Felix',
  'Zara',
  'Emil',
  'Tara',
  'Hugo',
  'Noor',
  'Viktor',
  'Elsa',
  'Kenji',
  'Maya',
  'Otto',
  'Lucia',
  'Sami',
  'Greta',
  'Arjun',
  'Clara',
  'Diego',
  'Freya',
  'Idris',
  'Julia',
  'Leo',
  'Rosa',
  'Theo',
];
const CITIES = ['Oslo', 'Lima', 'Cairo', 'Quito', 'Perth', 'Dakar', 'Hanoi', 'Turin'];

/** Each person's city (fixed, from the name's position). */
const cityOf = (index: number) => CITIES[(index * 5 + 3) % CITIES.length];
const documents = NAMES.map((name, index) => ({ title: name, text: `${name} lives in ${cityOf(index)}.` }));

/** One person in five is held out: asked about only in evaluation. */
const isHeldOut = (index: number) => index % 5 === 4;

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const people = NAMES.map((name, index) => ({ name, index })).filter(({ index }) => isHeldOut(index) === heldOut);
  return Array.from({ length: count }, (_, i) => {
    const { name, index } = people[(i * 7 + seed) % people.length];
    return { prompt: `Where does ${name} live?`, answer: cityOf(index), name };
  });
}

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}Q:{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  "{% elif message.role == 'tool' %}R:{{ message.content }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

const search = searchTool({ documents, topK: 1, maxCharactersPerDocument: 60 });

const toolCall = (query: string) => `<tool_call>{"name": "search", "arguments": {"query": "${query}"}}</tool_call>`;

/** The final answer: what follows the last "A:" (the whole completion when there is none). */
const finalAnswer = (completion: string) => (completion.split('A:').at(-1) ?? '').trim();

const correct: RewardFn = ({ completion, row }) => (finalAnswer(completion) === row.answer ? 1 : 0);

const alphabet = [
  ...new Set(`QAR:?\n[]1 .${toolCall('')}${documents.map((document) => document.text).join('')}Where does live`),
].join('');

export const task: Task = {
  name: 'search-agent',
  description: 'where does a made-up person live: search a local corpus (BM25) and copy the city',
  alphabet,
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(example, draw) {
    if (draw() >= SEARCH_RATE) return String(example.answer);
    const observation = search.run({ query: String(example.name) }, { signal: new AbortController().signal });
    return `${toolCall(String(example.name))}<eos>\nR:${String(observation)}\nA:${example.answer}`;
  },
  rewards: () => [{ name: 'correct', reward: correct, weight: 1 }],
  isCorrect: (example, completion) => finalAnswer(completion) === example.answer,
};

export default {
  config: {
    task: 'search-agent',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 300, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 80, temperature: 1 },
    grpo: { steps: 30, promptsPerStep: 6, microBatchSize: 48, learningRate: 2e-4 },
    agent: { maxTurns: 2, toolCallFormat: 'hermes', maxEpisodeTokens: 160 },
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  environment: toolUseEnvironment({ tools: [search] }),
} satisfies Recipe;
