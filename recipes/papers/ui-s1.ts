/**
 * UI-S1 (#96, Lu et al. 2025, arXiv 2509.11543): semi-online RL for a multi-turn GUI agent. Run:
 * `npx grpo train recipes/papers/ui-s1.ts`.
 *
 * The paper's two parts, both from the authors' code (X-PLUG/MobileAgent UI-S1/, at 93afb00):
 *   - the semi-online rollout: `semiOnlineEnvironment` replays a recorded expert trajectory; every
 *     turn is scored against the expert's action (0.1·format + 0.9·action, action 1 / 0.5 / 0.1 /
 *     0), the next screen is always the expert's, and a wrong action is patched with the expert's
 *     at most `patchThreshold` = 2 times (the launch script's PATCH_THRESHOLD) before a miss ends
 *     the episode;
 *   - the advantage: `algorithm.turnCredit: ui-s1`, step returns discounted with γ = 0.5 and cut at
 *     an unmatched turn, z-scored per step index, plus the turn scores z-scored over the group
 *     (mode mean_std_norm, step weight 1).
 * The run's reward is `environment`: the fraction of the trajectory's steps matched exactly (the
 * sum of the authors' `step_reward`s), logged; `ui-s1` reads the turn scores. Settings from
 * UI-S1/scripts/train_example.sh that transfer: 8 episodes per task, KL 1e-4 (k3, their
 * low_var_kl) in the loss. That do not: their learning rate 1e-6 (Qwen2.5-VL-7B); their DAPO
 * filter on the first step's return (std > 0.3) is not applied.
 *
 * Task (defined here): a small phone whose screens list items by id. An instruction names a path
 * (`settings>sound>mute`) or a message (`mail>new>"hi"`); the expert clicks each item's id and types
 * the word. The SFT teacher picks a wrong id or word on `TEACHER_ERROR_RATE` of its steps (the
 * environment patches it), so GRPO has work. Held-out accuracy reads what evaluation gives a
 * check, the episode's last turn: its action is the expert's last one (the task's final step done,
 * earlier misses patched or not); `eval/meanReward` is the fraction of steps matched exactly. Not here: screenshots, AndroidControl, and the paper's patch of the history
 * (here the wrong turn stays in the conversation and the next observation names the expert's action).
 */
import {
  generatedSplit,
  parseAction,
  semiOnlineEnvironment,
  type Example,
  type ExpertStep,
  type Pick,
  type Recipe,
  type Task,
} from '../../src/index.js';

/** Fraction of the teacher's steps with a wrong id or word. */
const TEACHER_ERROR_RATE = 0.3;

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

/** The phone's screens: a name → the items it lists (a leaf opens nothing). */
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
const WORDS = ['hi', 'yes', 'no', 'ok', 'later', 'thanks'];

/** A screen listing `items` under shuffled ids; returns the text and each item's id. */
function screen(items: readonly string[], pick: Pick): { text: string; ids: Map<string, number> } {
  const order = items.map((item) => ({ item, key: pick(1000) })).sort((a, b) => a.key - b.key);
  const ids = new Map(order.map(({ item }, index) => [item, index + 1]));
  return { text: `screen: ${order.map(({ item }, index) => `${index + 1} ${item}`).join(' ')}`, ids };
}

/** A task: a path from home down the menus (clicks), or a message to write (clicks, then type). */
function makeRow(pick: Pick): Example {
  const path: string[] = [];
  let menu = 'home';
  while (MENUS[menu]) {
    const items = MENUS[menu]!;
    const next = items[pick(items.length)]!;
    path.push(next);
    if (next === 'inbox' || next === 'new') break;
    menu = next;
  }
  const word = path.at(-1) === 'new' ? WORDS[pick(WORDS.length)]! : null;
  const steps: ExpertStep[] = [];
  menu = 'home';
  for (const item of path) {
    const shown = screen(MENUS[menu]!, pick);
    steps.push({ screen: shown.text, action: `click(${shown.ids.get(item)})` });
    menu = item;
  }
  if (word !== null) steps.push({ screen: 'screen: field to write', action: `type(${word})` });
  const instruction = `${path.join('>')}${word === null ? '' : `>"${word}"`}`;
  return {
    prompt: `task: ${instruction}\n${steps[0]!.screen}`,
    steps,
    instruction,
    answer: steps.map((step) => step.action).join(' '),
  };
}

const sample = (count: number, seed: number, heldOut: boolean): Example[] =>
  generatedSplit('ui-s1', count, seed, heldOut, makeRow);

/** What the expert's turn says: the item or word it looks for, then the action. */
function expertTurn(row: Example, index: number, action: string): string {
  const target = String(row.instruction).split('>')[index]!.replaceAll('"', '');
  return `<think>${target}</think><action>${action}</action>`;
}

/** A slip of the same type: another id on the screen, or another word. */
function slip(step: ExpertStep, draw: () => number): string {
  const { name, argument } = parseAction(`<action>${step.action}</action>`)!;
  if (name === 'type') return `type(${WORDS[(WORDS.indexOf(argument) + 1 + Math.floor(draw() * 5)) % WORDS.length]})`;
  const count = step.screen.split(' ').length / 2 - 0.5;
  return `click(${((Number(argument) + Math.floor(draw() * (count - 1))) % count) + 1})`;
}

export const task: Task = {
  name: 'gui-trajectories',
  description: 'follow a recorded phone-GUI trajectory: click items by id, type a word (UI-S1 #96 semi-online replay)',
  alphabet: [
    ...new Set(
      `${Object.entries(MENUS).flat(2).join(' ')}${WORDS.join(' ')}0123456789 task:screen:field to write>"\n` +
        '<think></think><action></action>click()type()patched: A',
    ),
  ].join(''),
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(row, draw) {
    // The whole episode as the chat template renders it, the environment's patches included.
    const steps = row.steps as ExpertStep[];
    const turns: string[] = [];
    let patches = 0;
    for (let index = 0; index < steps.length; index++) {
      const wrong = draw() < TEACHER_ERROR_RATE;
      turns.push(expertTurn(row, index, wrong ? slip(steps[index]!, draw) : steps[index]!.action));
      if (wrong && ++patches > 2) break;
      if (index + 1 < steps.length)
        turns.push(`<eos>\n${wrong ? `patched: ${steps[index]!.action}\n` : ''}${steps[index + 1]!.screen}\nA:`);
    }
    return turns.join('');
  },
  rewards: () => [],
  // Evaluation sees the episode's last assistant turn: correct when its action is the expert's last one.
  isCorrect: (row, completion) => {
    const action = parseAction(completion);
    const steps = row.steps as ExpertStep[];
    return action !== null && `${action.name}(${action.argument})` === steps[steps.length - 1]!.action;
  },
};

export default {
  config: {
    task: 'gui-trajectories',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 500, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 56, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 4, microBatchSize: 32, learningRate: 1e-4 },
    agent: { maxTurns: 5, maxEpisodeTokens: 260, toolCallFormat: 'hermes' },
    algorithm: {
      turnCredit: { name: 'ui-s1', options: { gamma: 0.5, stepWeight: 1, normalization: 'mean-std' } },
      klCoefficient: 1e-4,
      klEstimator: 'k3',
    },
    rewards: [{ name: 'environment', weight: 1, options: {} }],
    evaluation: { examples: 40 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  environment: semiOnlineEnvironment({ patchThreshold: 2 }),
} satisfies Recipe;
