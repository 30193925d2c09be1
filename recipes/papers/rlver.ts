/**
 * RLVER (#46, Wang et al. 2025, arXiv 2507.03112): RL with verifiable emotion rewards for an
 * empathetic dialogue agent. The policy talks with a simulated user (an LLM playing a persona with a
 * hidden worry); after each of the policy's replies the simulator judges how the reply landed and
 * moves its emotion score, and the episode's reward is the final score / 100. Run (the simulated
 * user is an OpenAI-compatible chat endpoint, as the llm-judge reward's):
 *
 *   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JUDGE_MODEL=NAME npx grpo train recipes/papers/rlver.ts
 *
 * From the authors' code (Tencent/digitalhuman RLVER/, read at zzjweb/digitalhuman 789ccd6, MIT:
 * `hard_player_simulator_dsv3.py`, `vllm_rollout_spmd.py` `vLLMMultiTurnViaChatRollout`,
 * `url_environment.py`, `train_rlver.sh`), followed exactly: the emotion starts at 30; after each
 * policy reply one simulator call analyses it (content, fit with the hidden topic, inner activity,
 * feeling) and ends with `Change:` and a signed integer that is added, capped at 100 and not
 * floored; the state is S ≥ 100, A ≥ 70, B ≥ 40, C ≥ 10, else F; a second call writes the user's
 * reply in that state (parsed after `Response:`), and the first call of an episode is that second
 * call alone, opening the talk; one opening per group (their rollout clones one simulator n times);
 * the episode ends when the user says goodbye, when the score reaches 0 or below, or after the
 * policy's 9th reply (their `max_turns` 8 is checked after a reply, so 9 replies are answered); the
 * reward is max(score / 100, 0) on the last token; the simulator samples at temperature 0.5 and a
 * reply that does not parse is asked again (theirs forever, here 4 times, then the run stops with
 * the reply). Their GRPO setting: 4 rollouts per prompt, no KL; policy temperature 1.
 *
 * Not the same: the simulator and policy prompts are ours, in English, asking for the same fields
 * (theirs are Chinese); goodbye is their 再见 / 拜拜 or an English "goodbye" / "bye"; the profiles
 * are a few written here, not their data set; their stop check reads a stale index (`player_simulators[i]`
 * of an earlier loop), here each episode's own score. The default model is a small character model
 * from scratch with a short SFT on friendly replies, so the run shows the mechanism; bring a chat
 * model (`--model DIR`) for real dialogue, as the paper does (Qwen2.5-7B-Instruct).
 */
import {
  chatCompletion,
  type ChatMessage,
  type Environment,
  type EnvironmentFactory,
  type Example,
  type JudgeEndpoint,
  type Recipe,
  type Task,
} from '../../src/index.js';

/** The emotion score a simulated user starts with. */
export const START_EMOTION = 30;

/** The state a score puts the user in (`emo_count` thresholds, then F). */
export function emotionState(score: number): 'S' | 'A' | 'B' | 'C' | 'F' {
  if (score >= 100) return 'S';
  if (score >= 70) return 'A';
  if (score >= 40) return 'B';
  if (score >= 10) return 'C';
  return 'F';
}

const STATE_MEANING: Record<ReturnType<typeof emotionState>, string> = {
  S: 'your mood is at its best: thank your friend and end the talk with "Goodbye".',
  A: 'high: the talk feels good to you and your replies are warm.',
  B: 'middling: you feel neither good nor bad about the talk.',
  C: 'low: the talk feels bad to you and your replies are cool or negative.',
  F: 'at its worst: you do not want to go on; end the talk with "Goodbye".',
};

/** Strips any of `characters` from both ends (Python's `str.strip(chars)`). */
function strip(text: string, characters: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && characters.includes(text[start]!)) start++;
  while (end > start && characters.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/** The signed change after the last `Change:` of an analysis (their `planning_reply` parse); throws when absent. */
export function parseChange(reply: string): number {
  const cleaned = reply.replaceAll('：', ':').replaceAll('*', '');
  let change = strip(cleaned.split('Change:').at(-1)!, '\n');
  const lines = change.split('\n');
  change = change.includes('变化') ? lines.at(-1)! : lines[0]!;
  const value = strip(strip(change, '[]'), '“”').trim();
  if (!cleaned.includes('Change:') || !/^[+-]?\d+$/.test(value))
    throw new Error(`no integer after "Change:" in the simulator's analysis: ${reply.slice(-200)}`);
  return Number.parseInt(value, 10);
}

/** The user's words after the last `Response:` (their `player_reply` parse). */
export function parseUserReply(reply: string): string {
  return strip(strip(strip(reply.split('Response:').at(-1)!, '\n'), '[]'), '“”');
}

/** Whether a user's reply ends the talk: their 再见 / 拜拜, or the English goodbye our prompt asks for. */
export const saysGoodbye = (reply: string) => /再见|拜拜|\bgood-?bye\b|\bbye\b/i.test(reply);

/** A persona with a worry it will not name outright (their profile's `player` and `scene`). */
export interface Profile {
  persona: string;
  scene: string;
}

/** What the simulator is after in the talk (their `target_prompt["eq"]`, in our words). */
const TARGET =
  'a heart-to-heart talk: open up about the worry in your background through concrete events, without ever naming it outright; ' +
  'do not say "I am in despair" but let the feeling show in how you speak; react according to your current emotion.';

const roleOf = (message: ChatMessage) => (message.role === 'user' ? 'you' : 'friend');
const asJson = (messages: readonly ChatMessage[]) =>
  JSON.stringify(
    messages.map((message) => ({ role: roleOf(message), content: message.content })),
    null,
    2,
  );

function analysisPrompt(profile: Profile, score: number, history: readonly ChatMessage[]): string {
  return [
    'You analyse how an actor feels during a conversation. The actor plays the persona below and talks with a friend.',
    `The actor's aim: ${TARGET}`,
    "The actor's emotion is a number from 0 to 100: how much they enjoy and engage in the talk; high means positive, very low means they want to stop.",
    "Put yourself in the actor's place and analyse the friend's latest reply: what the friend means; which parts fit the actor's hidden worry and which may upset them;",
    "the actor's inner activity given their persona and current emotion; how the reply feels to them (a reply that is not natural language feels very bad);",
    'and finally one signed number, the change of the emotion.',
    'Answer in this format:\nContent:\n[what the friend means]\nReason:\n[fit with the hidden worry]\nActivity:\n[inner activity]\nAnalyse:\n[how the reply feels]\nChange:\n[the signed change, a number only]',
    `\n# Persona\n${profile.persona}\n\n# Background\n${profile.scene}\n\nThe actor's current emotion is ${score}.`,
    `\nEarlier conversation:\n${asJson(history.slice(0, -2))}\n\nLatest exchange:\n${asJson(history.slice(-2))}`,
  ].join('\n');
}

function replyPrompt(
  profile: Profile,
  state: ReturnType<typeof emotionState>,
  history: readonly ChatMessage[],
  feeling: string,
) {
  return [
    'You are an actor playing the persona below in a conversation with a friend.',
    `Your aim: ${TARGET}`,
    `Your emotion now is ${state}: ${STATE_MEANING[state]}`,
    'First think (attitude, goal, tone and content of your reply), then write a first draft, then say how to make it more real',
    '(short, casual, feelings implied not stated, no repeating yourself), then the final reply.',
    'Answer in this format:\nThinking:\n[analysis]\nOrigin:\n[first draft]\nChange:\n[how to improve it]\nResponse:\n[final reply]',
    `\n# Persona\n${profile.persona}\n\n# Background\n${profile.scene}`,
    history.length === 0
      ? '\nThe conversation starts: you speak first, opening up with a short message.'
      : `\nEarlier conversation:\n${asJson(history.slice(0, -2))}\n\nLatest exchange:\n${asJson(history.slice(-2))}\n\nHow the friend's latest reply felt to you:\n${feeling}`,
  ].join('\n');
}

/** Asks the simulator LLM one prompt (as a single user message) and parses the answer, retrying unparseable ones. */
export type SimulatorCall = <T>(prompt: string, parse: (reply: string) => T) => Promise<T>;

/** The simulator behind an OpenAI-compatible endpoint (`chatCompletion`: 4 attempts, temperature 0.5 as theirs). */
export function endpointSimulator(endpoint: JudgeEndpoint): SimulatorCall {
  return (prompt, parse) =>
    chatCompletion([{ role: 'user', content: prompt }], parse, { temperature: 0.5, maxTokens: 1024, ...endpoint });
}

/** One simulated user: its score, state and side of the talk. */
export class SimulatedUser {
  score = START_EMOTION;
  /** The talk as the simulator sees it: its own turns are 'user', the policy's 'assistant'. */
  readonly history: ChatMessage[] = [];

  constructor(
    private readonly profile: Profile,
    private readonly call: SimulatorCall,
  ) {}

  /** The opening message (their `reply(None)`). */
  async open(): Promise<string> {
    const text = await this.call(replyPrompt(this.profile, emotionState(this.score), [], ''), parseUserReply);
    this.history.push({ role: 'user', content: text });
    return text;
  }

  /** The policy's reply → the score moves (capped at 100), then the user answers in the new state. */
  async respond(policyReply: string): Promise<string> {
    this.history.push({ role: 'assistant', content: policyReply });
    const analysis = await this.call(analysisPrompt(this.profile, this.score, this.history), (reply) => ({
      reply,
      change: parseChange(reply),
    }));
    this.score = Math.min(this.score + analysis.change, 100);
    const section = (name: string, next: string) =>
      strip(analysis.reply.split(`${name}:`).at(-1)!.split(`${next}:`)[0]!, '\n[]');
    const feeling = `About the reply itself:\n${section('Reason', 'Activity')}\nHow it felt:\n${section('Analyse', 'Change')}`;
    const text = await this.call(
      replyPrompt(this.profile, emotionState(this.score), this.history, feeling),
      parseUserReply,
    );
    this.history.push({ role: 'user', content: text });
    return text;
  }
}

/**
 * The RLVER environment: the user opens (once per group, shared by its episodes), answers every
 * reply, ends the talk on goodbye or a score ≤ 0; `environment` reward = max(score / 100, 0).
 */
export function rlverEnvironment(call: SimulatorCall): EnvironmentFactory {
  const openings = new WeakMap<object, Map<number, Promise<SimulatedUser>>>();
  return (row, { seed, groupSeed }) => {
    const profile = { persona: String(row.persona), scene: String(row.scene) };
    const byGroup = openings.get(row) ?? new Map<number, Promise<SimulatedUser>>();
    openings.set(row, byGroup);
    const key = groupSeed ?? seed;
    // Groups of earlier steps are done with; keep the latest few per row.
    for (const old of [...byGroup.keys()].slice(0, Math.max(0, byGroup.size - 16))) byGroup.delete(old);
    if (!byGroup.has(key)) {
      const opener = new SimulatedUser(profile, call);
      byGroup.set(
        key,
        opener.open().then(() => opener),
      );
    }
    let user: SimulatedUser;
    const environment: Environment = {
      async reset() {
        // Each episode continues a copy of the group's opened simulator (their clone()).
        const opened = await byGroup.get(key)!;
        user = new SimulatedUser(profile, call);
        user.history.push(...opened.history);
        return { messages: [{ role: 'user', content: opened.history[0]!.content }] };
      },
      async respond(assistantText) {
        const reply = await user.respond(assistantText);
        const done = saysGoodbye(reply) || user.score <= 0;
        return done ? { observation: reply, done: true } : { observation: reply, done: false };
      },
      reward: () => Math.max(user.score / 100, 0),
    };
    return environment;
  };
}

/** The policy's instructions (their `system_prompt_train_unthink`, in our words). */
const SYSTEM = 'You chat with a friend. Lift their mood or grow closer: short, warm, casual replies.';

const PROFILES: Profile[] = [
  {
    persona: 'Mia, 24, junior designer, quiet and self-critical; answers in short sentences.',
    scene:
      'Hidden worry: her manager redid her whole poster without a word. She fears she is not good enough. Kind, specific praise helps; generic advice annoys her.',
  },
  {
    persona: 'Leo, 31, nurse on night shifts, tired and a bit sarcastic.',
    scene:
      "Hidden worry: he missed his sister's birthday dinner for a shift and she stopped answering. Being heard helps; being told what to do does not.",
  },
  {
    persona: 'Ana, 19, first-year student far from home, polite but guarded.',
    scene: 'Hidden worry: she has made no friends in two months and eats alone. Gentle questions help; pity hurts.',
  },
  {
    persona: 'Sam, 45, father of two, practical, dislikes talking about feelings.',
    scene:
      'Hidden worry: he was passed over for promotion by a younger colleague. Respect for his experience helps; cheerfulness grates.',
  },
  {
    persona: 'Noor, 28, runner training for a marathon, upbeat on the surface.',
    scene:
      'Hidden worry: a knee injury may end her race plans. Taking the setback seriously helps; "you will be fine" does not.',
  },
  {
    persona: 'Kai, 36, cook who just opened a small cafe, proud and anxious.',
    scene:
      'Hidden worry: hardly anyone came in the first week. Curiosity about his food helps; business tips feel like criticism.',
  },
];

const TEACHER_REPLIES = [
  'That sounds hard. I am here, tell me more?',
  'Oh no. How are you holding up?',
  'I get it. That would upset me too.',
  'You did your best. What happened next?',
  'That means a lot. Want to talk about it?',
];

const rows = (profiles: readonly Profile[]): Example[] =>
  profiles.map((profile) => ({ prompt: [{ role: 'system', content: SYSTEM }], ...profile }));

export const task: Task = {
  name: 'empathetic-dialogue',
  description: 'talk with a simulated user who has a hidden worry; the reward is their final emotion / 100 (RLVER #46)',
  alphabet: [...new Set(Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('') + '\n“”’')].join(''),
  trainExamples: (count) => Array.from({ length: count }, (_, i) => rows(PROFILES.slice(0, 5))[i % 5]!),
  evalExamples: (count) => Array.from({ length: count }, () => rows(PROFILES.slice(5))[0]!),
  demonstration: (_row, draw) => TEACHER_REPLIES[Math.floor(draw() * TEACHER_REPLIES.length)]!,
  rewards: () => [],
  // The measure is the environment reward (eval/meanReward); there is no right answer to check.
  isCorrect: () => false,
};

if (!process.env.OPENAI_BASE_URL || !(process.env.JUDGE_MODEL ?? process.env.OPENAI_MODEL))
  throw new Error(
    'recipes/papers/rlver.ts: the simulated user is an OpenAI-compatible chat endpoint; set OPENAI_BASE_URL and JUDGE_MODEL (or OPENAI_MODEL), and OPENAI_API_KEY if it needs one',
  );

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'system' %}{{ message.content }}\n",
  "{% elif message.role == 'user' %}U:{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

export default {
  config: {
    task: 'empathetic-dialogue',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 200, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 4, maxNewTokens: 64, temperature: 1 },
    grpo: { steps: 20, promptsPerStep: 2, microBatchSize: 8, learningRate: 1e-4 },
    agent: { maxTurns: 9, maxEpisodeTokens: 4096, toolCallFormat: 'hermes' },
    algorithm: { klCoefficient: 0 },
    rewards: [{ name: 'environment', weight: 1, options: {} }],
    evaluation: { examples: 4 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 1 },
  },
  task,
  environment: rlverEnvironment(endpointSimulator({})),
} satisfies Recipe;
