/**
 * Driving meta-action planning, for AlphaDrive (#69, Jiang et al. 2025, arXiv 2503.07608): each row
 * is a generated driving scene told in text (the ego speed, the navigation command, a traffic light,
 * the car ahead, whether the side lanes are free) and the model plans the next three seconds as one
 * SPEED action (KEEP, ACCELERATE, DECELERATE, STOP) and one PATH action (STRAIGHT, LEFT_CHANGE,
 * RIGHT_CHANGE, LEFT_TURN, RIGHT_TURN), answering `<think>…</think><answer> STOP, LEFT_TURN </answer>`
 * as the authors' prompt asks (data_tools/prompt_hub.py). Column `solution` holds the gold plan in
 * their form (`<answer> STOP, LEFT_TURN </answer>`); the rewards are `plan-speed`, `plan-path` and
 * `plan-format` (src/rewards/driving-plan.ts).
 *
 * The gold plan is a fixed rule of the scene (so it is verifiable):
 *   path:  a turn within 30 m → LEFT_TURN / RIGHT_TURN; else a stopped car within 30 m and a free
 *          side lane → LEFT_CHANGE (left first) / RIGHT_CHANGE; else STRAIGHT.
 *   speed: a red light within 20 m, or a stopped car within 20 m that the path does not avoid →
 *          STOP; a red light within 50 m, a slower car within 30 m, or a turn within 30 m above
 *          8 m/s → DECELERATE; below 12 m/s with no light and no car within 50 m → ACCELERATE; else KEEP.
 *
 * Why GRPO has work: the SFT teacher (the paper distils reasoning from a larger model first) misses
 * one cue on `teacherErrorRate` of its demonstrations: it keeps its speed where it should slow or
 * stop, or drives straight where it should turn or change lane. Correct (held-out accuracy): the
 * plan's speed and path actions are exactly the gold ones. Held out: scenes whose prompt hashes
 * into one bucket of eight.
 *
 * Is not: camera images or the MetaAD data set (the paper's VLM reads a front-camera frame); the
 * scene is given as text, so this trains the paper's rewards and two-stage SFT→RL recipe, not its perception.
 */
import { z } from 'zod';
import {
  PATH_ACTION_WEIGHTS,
  SPEED_ACTION_WEIGHTS,
  planActions,
  planFormat,
  planPath,
  planSpeed,
} from '../../rewards/driving-plan.js';
import type { NamedReward } from '../../rewards/types.js';
import { generatedSplit, type Pick } from '../generated-split.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `drivingPlanningTask` accepts (config `taskOptions`); unknown keys are refused. */
export const drivingPlanningOptionsSchema = z
  .object({
    /** Fraction of SFT demonstrations that miss one cue of the scene (default 0.4). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

type Turn = 'straight' | 'left' | 'right';

/** One scene; distances in metres, speeds in m/s. A car ahead with speed 0 is stopped. */
export interface DrivingScene {
  speed: number;
  navigation: Turn;
  navigationDistance: number;
  redLightDistance: number | null;
  carDistance: number | null;
  carSpeed: number;
  leftLaneFree: boolean;
  rightLaneFree: boolean;
}

interface Plan {
  speed: string;
  path: string;
  /** Short reasons, one per cue that decided the plan. */
  reasons: string[];
}

/** The SPEED action of a scene and the cue that decided it (the rule in the file header). */
function speedAction(scene: DrivingScene, turnSoon: boolean, passing: boolean): [string, string] {
  const red = scene.redLightDistance;
  const car = scene.carDistance;
  if (red !== null && red <= 20) return ['STOP', 'red light near'];
  if (car !== null && scene.carSpeed === 0 && car <= 20 && !turnSoon && !passing) return ['STOP', 'stopped car near'];
  if (red !== null && red <= 50) return ['DECELERATE', 'red light ahead'];
  if (car !== null && car <= 30 && scene.carSpeed < scene.speed) return ['DECELERATE', 'slower car ahead'];
  if (turnSoon && scene.speed > 8) return ['DECELERATE', 'too fast to turn'];
  if (scene.speed < 12 && (car === null || car > 50) && red === null) return ['ACCELERATE', 'road clear'];
  return ['KEEP', 'keep pace'];
}

/** The gold plan of a scene (the rule in the file header), with the reasons the teacher writes. */
export function goldPlan(scene: DrivingScene): Plan {
  const car = scene.carDistance;
  const turnSoon = scene.navigation !== 'straight' && scene.navigationDistance <= 30;
  const blocked = car !== null && scene.carSpeed === 0 && car <= 30;
  const passing = !turnSoon && blocked && (scene.leftLaneFree || scene.rightLaneFree);
  const [speed, speedReason] = speedAction(scene, turnSoon, passing);
  if (turnSoon)
    return {
      speed,
      path: scene.navigation === 'left' ? 'LEFT_TURN' : 'RIGHT_TURN',
      reasons: [speedReason, `turn ${scene.navigation}`],
    };
  if (passing) {
    const side = scene.leftLaneFree ? 'left' : 'right';
    return {
      speed,
      path: side === 'left' ? 'LEFT_CHANGE' : 'RIGHT_CHANGE',
      reasons: [speedReason, `pass on the ${side}`],
    };
  }
  return { speed, path: 'STRAIGHT', reasons: [speedReason] };
}

const answer = (speed: string, path: string) => `<answer> ${speed}, ${path} </answer>`;
const completion = (plan: Plan) => `<think>${plan.reasons.join('; ')}</think>${answer(plan.speed, plan.path)}`;

/** The prompt: the scene in a compact line, as the authors' prompt gives speed and navigation. */
export function scenePrompt(scene: DrivingScene): string {
  const navigation =
    scene.navigation === 'straight' ? 'straight' : `${scene.navigation} in ${scene.navigationDistance}m`;
  const light = scene.redLightDistance === null ? 'green' : `red ${scene.redLightDistance}m`;
  const car =
    scene.carDistance === null
      ? 'none'
      : scene.carSpeed === 0
        ? `stopped ${scene.carDistance}m`
        : `${scene.carDistance}m at ${scene.carSpeed}m/s`;
  const lanes = `L ${scene.leftLaneFree ? 'free' : 'busy'} R ${scene.rightLaneFree ? 'free' : 'busy'}`;
  return `speed ${scene.speed}m/s nav ${navigation} light ${light} car ${car} lanes ${lanes}\nplan:`;
}

const DISTANCES = [10, 20, 30, 40, 60, 80];

function drawScene(pick: Pick): DrivingScene {
  const navigation = (['straight', 'straight', 'left', 'right'] as const)[pick(4)]!;
  const hasCar = pick(3) > 0;
  return {
    speed: pick(15),
    navigation,
    navigationDistance: DISTANCES[pick(DISTANCES.length)]!,
    redLightDistance: pick(3) === 0 ? DISTANCES[pick(DISTANCES.length)]! : null,
    carDistance: hasCar ? DISTANCES[pick(DISTANCES.length)]! : null,
    carSpeed: hasCar && pick(3) > 0 ? pick(15) : 0,
    leftLaneFree: pick(2) === 0,
    rightLaneFree: pick(2) === 0,
  };
}

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  return generatedSplit('driving-planning', count, seed, heldOut, (pick) => {
    const scene = drawScene(pick);
    const plan = goldPlan(scene);
    return {
      prompt: scenePrompt(scene),
      scene,
      solution: answer(plan.speed, plan.path),
      answer: `${plan.speed}, ${plan.path}`,
    };
  });
}

/** The teacher's slip: keep the speed where it should slow or stop, or go straight where it should turn or change lane. */
function slip(plan: Plan, draw: () => number): Plan {
  const canMissSpeed = plan.speed === 'STOP' || plan.speed === 'DECELERATE';
  const canMissPath = plan.path !== 'STRAIGHT';
  if (canMissSpeed && (!canMissPath || draw() < 0.5))
    return { speed: 'KEEP', path: plan.path, reasons: ['keep pace', ...plan.reasons.slice(1)] };
  if (canMissPath) return { speed: plan.speed, path: 'STRAIGHT', reasons: plan.reasons.slice(0, 1) };
  return { ...plan, speed: plan.speed === 'KEEP' ? 'ACCELERATE' : 'KEEP' };
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((x) => b.has(x));

/** The driving-planning task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function drivingPlanningTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('driving-planning', drivingPlanningOptionsSchema, raw);
  const teacherErrorRate = parsed.teacherErrorRate ?? 0.4;
  const reasons =
    'red light near stopped car ahead slower too fast to turn road clear keep pace left right pass on the';
  const actions = [...Object.keys(SPEED_ACTION_WEIGHTS), ...Object.keys(PATH_ACTION_WEIGHTS)].join('');
  const alphabet = [
    ...new Set(
      `${sample(400, 1, false)
        .map((row) => row.prompt as string)
        .join('')}${reasons}${actions}<think></think><answer></answer>, ;0123456789`,
    ),
  ];
  return {
    name: 'driving-planning',
    description: 'plan speed and path meta-actions for a driving scene told in text (AlphaDrive #69)',
    alphabet: alphabet.sort().join(''),
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration: (row, draw) => {
      const plan = goldPlan(row.scene as DrivingScene);
      return completion(draw() < teacherErrorRate ? slip(plan, draw) : plan);
    },
    // Named apart from the built-ins, so a config naming `plan-speed` with options gets the built-in with them.
    rewards: (): NamedReward[] => [
      { name: 'speed', reward: planSpeed(), weight: 1 },
      { name: 'path', reward: planPath(), weight: 1 },
      { name: 'format', reward: planFormat(), weight: 1 },
    ],
    isCorrect: (row, text) => {
      const gold = String(row.solution);
      return (
        sameSet(planActions(text, SPEED_ACTION_WEIGHTS), planActions(gold, SPEED_ACTION_WEIGHTS)) &&
        sameSet(planActions(text, PATH_ACTION_WEIGHTS), planActions(gold, PATH_ACTION_WEIGHTS))
      );
    },
  };
}
