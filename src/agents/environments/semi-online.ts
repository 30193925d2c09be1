/**
 * UI-S1's semi-online environment (#96, Lu et al. 2025, arXiv 2509.11543): an offline expert
 * trajectory replayed as if online. Each model turn is scored against the expert's action for the
 * current screen; the next observation is always the expert's next screen, so the episode follows
 * the recorded trajectory whatever the model did. A turn whose action is not the expert's is
 * "patched" (the expert's action is put in its place and the episode goes on) at most
 * `patchThreshold` times; the next miss ends the episode. This follows the authors'
 * `MultiRoundGenerator.apply_response` (X-PLUG/MobileAgent UI-S1/verl/utils/dataset/universal_multiround.py,
 * at 93afb00; `patch_threshold` 2 in UI-S1/scripts/train_example.sh, −1 = always patch).
 *
 * Turn reward, as the authors' `gui_action_match_compute_score` (UI-S1/verl/utils/reward_score/gui_traj.py):
 * 0.1·format + 0.9·action, format 1 when `<think>…</think>` holds text, action 1 for the expert's
 * action exactly, 0.5 for the right action type with other arguments, 0.1 for a parsed action of
 * another type, 0 when no action parses. The episode's `reward()` is the sum of its `step_reward`s,
 * 1/num_steps per exactly matched step: the fraction of the trajectory the model got right.
 *
 * Actions are written `<action>click(2)</action>` / `<action>type(hi)</action>`: a name and one
 * argument string, compared after trimming (the paper's GUI actions compare coordinates against
 * the element's box; here an element is named by its id on the screen).
 * Where this differs from the authors: their patch replaces the model's wrong response in the
 * history the next turns see; here the wrong turn stays in the conversation and the observation
 * that follows names the expert's action (`patched: click(2)`) before the next screen.
 *
 * Is not: a GUI, a simulator or the AndroidControl data; the `ui-s1` turn-credit estimator reads
 * these turn rewards (src/algorithms/turn-credit-uis1.ts).
 */
import type { Environment, EnvironmentFactory, EnvironmentFeedback } from '../types.js';

/** One recorded step: what the screen showed and what the expert did there. */
export interface ExpertStep {
  screen: string;
  /** The expert's action, `name(argument)`, e.g. `click(2)`. */
  action: string;
}

/** Options of {@link semiOnlineEnvironment}. */
export interface SemiOnlineOptions {
  /** Row column with the expert trajectory, an array of {@link ExpertStep} (default 'steps'). */
  stepsColumn?: string;
  /** Wrong turns patched with the expert's action before a miss ends the episode; −1 = always (default 2). */
  patchThreshold?: number;
}

const ACTION = /<action>\s*(\w+)\((.*?)\)\s*<\/action>/g;
const THINK = /<think>([\s\S]*?)<\/think>/;

/** The last `<action>name(argument)</action>` of a turn, or null. */
export function parseAction(text: string): { name: string; argument: string } | null {
  const matches = [...text.matchAll(ACTION)];
  const last = matches.at(-1);
  return last ? { name: last[1]!, argument: last[2]!.trim() } : null;
}

/** UI-S1's step score of a turn against the expert's action, with the two match flags. */
export function guiStepScore(text: string, expert: string): { score: number; typeMatch: boolean; exactMatch: boolean } {
  const format = (THINK.exec(text)?.[1] ?? '').trim() !== '' ? 1 : 0;
  const predicted = parseAction(text);
  const gold = parseAction(`<action>${expert}</action>`);
  if (gold === null) throw new Error(`semiOnlineEnvironment: the expert action "${expert}" is not name(argument)`);
  const typeMatch = predicted !== null && predicted.name === gold.name;
  const exactMatch = typeMatch && predicted.argument === gold.argument;
  const action = predicted === null ? 0 : exactMatch ? 1 : typeMatch ? 0.5 : 0.1;
  return { score: 0.1 * format + 0.9 * action, typeMatch, exactMatch };
}

/** One episode over one expert trajectory, exported for direct tests. */
export class SemiOnlineEpisode implements Environment {
  private step = 0;
  private patches = 0;
  private matched = 0;
  private finished = false;

  constructor(
    private readonly steps: readonly ExpertStep[],
    private readonly patchThreshold: number,
  ) {}

  respond(assistantText: string): EnvironmentFeedback {
    const expert = this.steps[this.step]!;
    const { score, exactMatch } = guiStepScore(assistantText, expert.action);
    let note = '';
    if (exactMatch) this.matched++;
    else if (this.patchThreshold === -1 || this.patches < this.patchThreshold) {
      this.patches++;
      note = `patched: ${expert.action}\n`;
    } else {
      this.finished = true;
      return { reward: score, done: true };
    }
    this.step++;
    if (this.step >= this.steps.length) {
      this.finished = true;
      return { reward: score, done: true };
    }
    return { observation: `${note}${this.steps[this.step]!.screen}`, reward: score, done: false };
  }

  done(): boolean {
    return this.finished;
  }

  /** Σ step_reward: 1/num_steps for every step matched exactly. */
  reward(): number {
    return this.matched / this.steps.length;
  }
}

/**
 * A semi-online environment factory over expert trajectories in the row's `stepsColumn`; a row
 * whose trajectory is missing or malformed is an error naming the column.
 * @example semiOnlineEnvironment({ patchThreshold: 2 })
 */
export function semiOnlineEnvironment({
  stepsColumn = 'steps',
  patchThreshold = 2,
}: SemiOnlineOptions = {}): EnvironmentFactory {
  if (!Number.isInteger(patchThreshold) || patchThreshold < -1)
    throw new Error(`semiOnlineEnvironment: patchThreshold must be a whole number ≥ −1, got ${patchThreshold}.`);
  return (row) => {
    const steps = row[stepsColumn];
    const valid =
      Array.isArray(steps) &&
      steps.length > 0 &&
      steps.every(
        (step) =>
          typeof step === 'object' &&
          step !== null &&
          typeof (step as ExpertStep).screen === 'string' &&
          typeof (step as ExpertStep).action === 'string' &&
          parseAction(`<action>${(step as ExpertStep).action}</action>`) !== null,
      );
    if (!valid)
      throw new Error(
        `semiOnlineEnvironment: row column "${stepsColumn}" must be a non-empty array of {screen, action: "name(argument)"}, got ${JSON.stringify(steps)?.slice(0, 200)}.`,
      );
    return new SemiOnlineEpisode(steps as ExpertStep[], patchThreshold);
  };
}
