/**
 * Mobile-Agent-v3 / GUI-Owl's TRPO (#225; Ye et al. 2025, "Mobile-Agent-v3: Fundamental Agents for
 * GUI Automation", arXiv 2508.15144v2 §3.1.2 "Trajectory-aware Relative Policy Optimization"): online
 * RL for a multi-turn GUI agent with one reward per trajectory and a replay buffer of successful
 * trajectories. Run: `npx grpo train recipes/papers/mobile-agent-v3.ts`.
 *
 * From the paper's text (their RL code is not released; X-PLUG/MobileAgent holds inference only):
 *   - R(τ) = accuracy (1 when the task succeeds, else 0) + format (−0.5 for a malformed action);
 *   - the trajectory's normalised advantage Â_τ is given to every action (token) of the trajectory,
 *     and the loss is the clipped surrogate summed over all tokens of all steps divided by N, the
 *     number of tokens in the batch (`token-mean`);
 *   - the replay buffer (`trpoReplayRollout`): successful trajectories are stored by task; when every
 *     trajectory of a task's group fails, one failing trajectory, at random, is replaced by a
 *     successful one of the same task from the buffer;
 *   - Â_τ = (R(τ) − R̄)/(σ_R + ε) with "the running mean and standard deviation of rewards observed
 *     across multiple trajectories": the recipe's advantage estimator `trpo` (`trpoAdvantages`) keeps
 *     them over every trajectory reward of the run so far, this step's included.
 * Our choices where the paper says nothing: the running statistics are cumulative (Welford: not a
 * window or a decay), take in the step's rewards before normalising, use the sample std and ε = 1e-6,
 * and live in the part, so they start again at step 0 (and on --resume); which stored trajectory
 * replays (uniform, seeded) and that a replayed trajectory's π_old is recomputed under the current
 * policy, as verl's trainer recomputes old log-probs; a malformed action ends the episode, so a
 * trajectory is penalised at most once. The buffer lives in the rollout: a resumed run starts with it
 * empty.
 *
 * Task (defined here): a small phone (UI-S1's menus) driven online: each screen lists items by id, the
 * instruction names a path (`settings>sound>mute`), and clicking the wrong item ends the episode
 * (this phone has no back button). The SFT teacher clicks a wrong id on `TEACHER_ERROR_RATE` of its
 * steps, so many groups start all-failed and the buffer has work.
 */
import {
  defineAdvantageEstimator,
  generatedSplit,
  multiTurnRollout,
  noGrad,
  parseAction,
  type AdvantageFn,
  type AgentSettings,
  type Environment,
  type EnvironmentFactory,
  type Example,
  type Pick,
  type Recipe,
  type RolloutFn,
  type RolloutSample,
  type Task,
} from '../../src/index.js';
import type { RolloutContext } from '../../src/rollout/rollout.js';
import { completionLogprobs } from '../../src/trainer/completion-logprobs.js';
import { seededPick } from '../../src/rewards/stealthrl.js';

/** Fraction of the teacher's steps that click a wrong id. */
const TEACHER_ERROR_RATE = 0.35;

/** The format term of R(τ): a malformed action. */
export const MALFORMED_PENALTY = -0.5;

const MENUS: Record<string, string[]> = {
  home: ['mail', 'settings', 'camera', 'music'],
  settings: ['wifi', 'sound', 'display', 'battery'],
  wifi: ['on', 'off'],
  sound: ['loud', 'quiet', 'mute'],
  display: ['dark', 'light'],
  battery: ['saver', 'normal'],
  camera: ['photo', 'video'],
  music: ['play', 'stop', 'next'],
  mail: ['new', 'inbox'],
};

interface Step {
  screen: string;
  action: string;
}

/** A task: a path from home down the menus, each screen's items under shuffled ids. */
function makeRow(pick: Pick): Example {
  const path: string[] = [];
  const steps: Step[] = [];
  let menu = 'home';
  while (MENUS[menu]) {
    const items = MENUS[menu]!;
    const next = items[pick(items.length)]!;
    const order = items.map((item) => ({ item, key: pick(1000) })).sort((a, b) => a.key - b.key);
    steps.push({
      screen: `screen: ${order.map(({ item }, index) => `${index + 1} ${item}`).join(' ')}`,
      action: `click(${order.findIndex(({ item }) => item === next) + 1})`,
    });
    path.push(next);
    menu = next;
  }
  return {
    prompt: `task: ${path.join('>')}\n${steps[0]!.screen}`,
    steps,
    answer: steps.map((s) => s.action).join(' '),
  };
}

/** One episode on the phone: R(τ) = 1 on reaching the path's end, −0.5 after a malformed action, else 0. */
export class PhoneEpisode implements Environment {
  private index = 0;
  private outcome: 'running' | 'success' | 'failure' | 'malformed' = 'running';
  constructor(private readonly steps: readonly Step[]) {}

  respond(text: string) {
    const action = parseAction(text);
    if (action === null) this.outcome = 'malformed';
    else if (`${action.name}(${action.argument})` !== this.steps[this.index]!.action) this.outcome = 'failure';
    else if (++this.index === this.steps.length) this.outcome = 'success';
    if (this.outcome !== 'running') return { done: true };
    return { observation: this.steps[this.index]!.screen, done: false };
  }

  done() {
    return this.outcome !== 'running';
  }

  reward() {
    return (this.outcome === 'success' ? 1 : 0) + (this.outcome === 'malformed' ? MALFORMED_PENALTY : 0);
  }
}

export const phoneEnvironment: EnvironmentFactory = (row) => new PhoneEpisode(row.steps as Step[]);

/** Options of {@link trpoReplayRollout}. */
export interface TrpoReplayOptions {
  /** Whether a trajectory succeeded (default: its environment reward R(τ) is at least 1). */
  succeeded?: (sample: RolloutSample) => boolean;
  /** The buffer's key of a task (default: the prompt's text). */
  taskId?: (example: Example) => string;
  /** log π of a replayed trajectory's completion tokens now (default: a forward pass of the current model). */
  currentLogprobs?: (context: RolloutContext, sample: RolloutSample, temperature: number) => ArrayLike<number>;
}

const succeededByReward = (sample: RolloutSample) => (sample.episode?.environmentReward ?? 0) >= 1;

function logprobsNow(context: RolloutContext, sample: RolloutSample, temperature: number): ArrayLike<number> {
  if (sample.promptIds === undefined) throw new Error('trpoReplayRollout: a stored trajectory has no promptIds');
  const sequence = { promptIds: sample.promptIds, completionIds: sample.completionIds, lossMask: sample.lossMask };
  return noGrad(() => completionLogprobs(context.model, [sequence], temperature)).logprobs.data;
}

/**
 * TRPO's replay buffer around a rollout: stores every successful trajectory by task, and in a group
 * where all fail replaces one failing trajectory (at random) with a stored success of the same task,
 * its π_old recomputed now. Groups with a success, and tasks with nothing stored, are left as they are.
 */
export function trpoReplayRollout(inner: RolloutFn, options: TrpoReplayOptions = {}): RolloutFn {
  const succeeded = options.succeeded ?? succeededByReward;
  const taskId = options.taskId ?? ((example: Example) => String(example.prompt));
  const currentLogprobs = options.currentLogprobs ?? logprobsNow;
  const buffer = new Map<string, RolloutSample[]>();
  let calls = 0;
  const rollout: RolloutFn = async (context, prompts, settings) => {
    const samples = await inner(context, prompts, settings);
    const pick = seededPick(settings.seed * 7919 + calls++);
    const G = settings.groupSize;
    for (const [promptIndex, prompt] of prompts.entries()) {
      const key = taskId(prompt.example);
      const group = samples.slice(promptIndex * G, (promptIndex + 1) * G);
      const stored = buffer.get(key) ?? [];
      if (group.some(succeeded)) {
        buffer.set(key, [...stored, ...group.filter(succeeded)]);
        continue;
      }
      if (stored.length === 0) continue;
      const replayed = stored[pick(stored.length)]!;
      const logprobs = currentLogprobs(context, replayed, settings.temperature);
      samples[promptIndex * G + pick(G)] = {
        ...replayed,
        promptIndex,
        oldLogprobs: replayed.lossMask.map((inLoss, t) => (inLoss ? logprobs[t]! : 0)),
      };
    }
    return samples;
  };
  rollout.provides = inner.provides;
  return rollout;
}

/** Running count, mean and sum of squared deviations (Welford) of every trajectory reward seen. */
export interface RunningRewards {
  count: number;
  mean: number;
  squares: number;
}

/** Adds ε to σ_R before dividing (the GRPO convention of this repository; the paper gives no value). */
const TRPO_EPSILON = 1e-6;

/**
 * TRPO's Â_τ = (R(τ) − R̄)/(σ_R + ε): the running statistics first take in this step's scored rewards
 * (Welford), then every trajectory is normalised by them; σ_R is the sample std over every reward seen
 * (1 while only one has been). Unscored trajectories (null or NaN) get 0 and leave the loss.
 */
export function trpoAdvantages(running: RunningRewards, rewards: ArrayLike<number | null>): Float32Array {
  for (const reward of Array.from(rewards)) {
    if (reward === null || Number.isNaN(reward)) continue;
    running.count += 1;
    const delta = reward - running.mean;
    running.mean += delta / running.count;
    running.squares += delta * (reward - running.mean);
  }
  const std = running.count > 1 ? Math.sqrt(running.squares / (running.count - 1)) : 1;
  return Float32Array.from(rewards, (reward) =>
    reward === null || Number.isNaN(reward) ? 0 : (reward - running.mean) / (std + TRPO_EPSILON),
  );
}

/** `algorithm.advantage: trpo`: the running statistics live in this part and start again at step 0. */
function trpoAdvantagePart() {
  const running: RunningRewards = { count: 0, mean: 0, squares: 0 };
  const fn: AdvantageFn = (input) => {
    if (input.step === 0) Object.assign(running, { count: 0, mean: 0, squares: 0 });
    const rewards = Array.from(input.rewards, (reward) => (reward === null ? Number.NaN : reward));
    const sizes =
      typeof input.groupSizes === 'number'
        ? new Array<number>(rewards.length / input.groupSizes).fill(input.groupSizes)
        : input.groupSizes;
    let start = 0;
    const stdIsZero = Uint8Array.from(sizes, (size) => {
      const scored = rewards.slice(start, (start += size)).filter((reward) => !Number.isNaN(reward));
      return scored.every((reward) => reward === scored[0]) ? 1 : 0;
    });
    return {
      advantages: trpoAdvantages(running, rewards),
      keep: Uint8Array.from(rewards, (reward) => (Number.isNaN(reward) ? 0 : 1)),
      stdIsZero,
    };
  };
  return defineAdvantageEstimator({
    name: 'trpo',
    fn,
    description: "Â_τ = (R(τ) − R̄)/(σ_R + 1e-6) with the run's running mean and std of every trajectory reward so far",
    citation: 'Mobile-Agent-v3 TRPO (#225), Ye et al. 2025, arXiv 2508.15144v2 §3.1.2',
  });
}

export const trpoAdvantage = trpoAdvantagePart();

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

const AGENT: AgentSettings = {
  maxTurns: 4,
  toolTimeoutMs: 10_000,
  toolCallFormat: 'hermes',
  maxEpisodeTokens: 200,
  maxToolErrors: null,
  episodeTimeoutMs: null,
};

const sample = (count: number, seed: number, heldOut: boolean): Example[] =>
  generatedSplit('phone-online', count, seed, heldOut, makeRow);

export const task: Task = {
  name: 'phone-online',
  description: 'drive a small phone online: click the ids of a path down its menus (Mobile-Agent-v3 TRPO #225)',
  alphabet: [
    ...new Set(`${Object.entries(MENUS).flat(2).join(' ')}0123456789 task:screen:>\n<action></action>click()A`),
  ].join(''),
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(row, draw) {
    // The episode as the chat template renders it; a wrong click ends it, as in the environment.
    const steps = row.steps as Step[];
    const turns: string[] = [];
    for (const [index, step] of steps.entries()) {
      const count = step.screen.split(' ').length / 2 - 0.5;
      const wrong = draw() < TEACHER_ERROR_RATE;
      const id = Number(/\d+/.exec(step.action)![0]);
      turns.push(`<action>${wrong ? `click(${(id % count) + 1})` : step.action}</action>`);
      if (wrong || index + 1 === steps.length) break;
      turns.push(`<eos>\n${steps[index + 1]!.screen}\nA:`);
    }
    return turns.join('');
  },
  // R(τ), as the phone scored the episode (a recipe rollout has no `environment` reward of the trainer's).
  rewards: () => [{ name: 'trajectory', reward: ({ episode }) => episode?.environmentReward ?? null, weight: 1 }],
  // Evaluation plays single completions here (a recipe rollout is not used for held-out episodes), so
  // held-out accuracy is the first screen's click; `reward/trajectory/mean` measures whole trajectories.
  isCorrect: (row, completion) => {
    const action = parseAction(completion);
    return action !== null && `${action.name}(${action.argument})` === (row.steps as Step[])[0]!.action;
  },
};

export default {
  config: {
    task: 'phone-online',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 400, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 32, temperature: 1 },
    grpo: { steps: 60, promptsPerStep: 4, microBatchSize: 32, learningRate: 1e-4 },
    // Â_τ from the running statistics on every token, 1/N over the batch's tokens.
    algorithm: { advantage: 'trpo', aggregation: 'token-mean' },
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  rollout: trpoReplayRollout(multiTurnRollout(phoneEnvironment, AGENT)),
  parts: [trpoAdvantage],
} satisfies Recipe;
