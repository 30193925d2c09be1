/**
 * NP-hard graph problems on small generated graphs, for Graph-R1 (#178): shortest path (hops),
 * travelling salesman on a complete weighted graph, minimum vertex cover and graph colouring. Nodes
 * are capital letters; the answer is the last `[...]` of the completion, as the authors' checkers
 * read it (src/rewards/graph-problems.ts). Every row carries its exact optimum, computed here by
 * brute force, so the reward is exact.
 *
 * Prompts are compact for a character model: `mvc AB AC BD:` (a problem and its edges),
 * `tsp AB3 AC5 …:` (every pair with its distance), `path A-D AB BC CD:` and `color AB BC:`.
 * Why GRPO has work: the SFT teacher answers `teacherErrorRate` of its demonstrations with a
 * feasible but suboptimal solution (a longer path, a random tour, every endpoint as the cover, one
 * colour per node) — exactly the answers Graph-R1's partial credit scores between −1 and 2.
 * Held out: instances whose prompt hashes into one bucket of eight are never trained on (small
 * graphs repeat, so the split is by the instance itself, not by its seed).
 * Is not: GraphArena's real-world graphs (no download here) or the maximisation problems.
 */
import { z } from 'zod';
import { regexMatch } from '../../rewards/format.js';
import {
  checkGraphAnswer,
  graphProblemKinds,
  graphSolution,
  solveGraphProblem,
  type GraphInstance,
  type GraphProblemKind,
  type SmallGraph,
} from '../../rewards/graph-problems.js';
import type { NamedReward } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `graphProblemsTask` accepts (config `taskOptions`); unknown keys are refused. */
export const graphProblemsOptionsSchema = z
  .object({
    /** Which problems to draw from, in turn (default all four). */
    problems: z.array(z.enum(graphProblemKinds)).min(1).optional(),
    /** Fewest nodes of a graph (default 4). */
    minNodes: z.number().int().min(3).max(8).optional(),
    /** Most nodes of a graph (default 5; TSP tries every tour, so keep it small). */
    maxNodes: z.number().int().min(3).max(8).optional(),
    /** Fraction of SFT demonstrations with a feasible but suboptimal answer (default 0.4). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
    /** Start the demonstration with `<think>\n</think>\n`, as Graph-R1's format reward asks (default true). */
    think: z.boolean().optional(),
  })
  .strict();

const LETTERS = 'ABCDEFGH';
const prefix: Record<GraphProblemKind, string> = { distance: 'path', tsp: 'tsp', mvc: 'mvc', coloring: 'color' };

type Pick = (n: number) => number;

function hash(value: number): number {
  let h = Math.imul(value + 1, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

/** One prompt in eight (by a string hash) is held out of training. */
function isHeldOut(prompt: string): boolean {
  let h = 2166136261;
  for (let index = 0; index < prompt.length; index++) h = Math.imul(h ^ prompt.charCodeAt(index), 16777619) >>> 0;
  return hash(h) % 8 === 0;
}

/** A connected random graph (a random spanning tree plus extra edges), or a complete one for TSP. */
function randomGraph(problem: GraphProblemKind, count: number, pick: Pick): SmallGraph {
  const nodes = LETTERS.slice(0, count).split('');
  const edges: Array<[number, number, number]> = [];
  if (problem === 'tsp') {
    for (let from = 0; from < count; from++)
      for (let to = from + 1; to < count; to++) edges.push([from, to, 1 + pick(9)]);
    return { nodes, edges };
  }
  const has = (a: number, b: number) => edges.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  for (let node = 1; node < count; node++) edges.push([pick(node), node, 1]);
  for (let extra = pick(count); extra > 0; extra--) {
    const a = pick(count);
    const b = pick(count);
    if (a !== b && !has(a, b)) edges.push([Math.min(a, b), Math.max(a, b), 1]);
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  return { nodes, edges };
}

function promptOf(instance: GraphInstance): string {
  const { graph, problem } = instance;
  const edge = ([from, to, weight]: [number, number, number]) =>
    `${graph.nodes[from]}${graph.nodes[to]}${problem === 'tsp' ? weight : ''}`;
  const ends = problem === 'distance' ? ` ${graph.nodes[instance.source!]}-${graph.nodes[instance.target!]}` : '';
  return `${prefix[problem]}${ends} ${graph.edges.map(edge).join(' ')}:`;
}

/** A feasible but (usually) suboptimal answer, for the teacher's mistakes. */
function suboptimal(instance: GraphInstance, pick: Pick): string {
  const { graph, problem } = instance;
  const names = (indices: readonly number[]) => `[${indices.map((index) => graph.nodes[index]).join(', ')}]`;
  switch (problem) {
    case 'distance': {
      // A random walk from the source that stops at the target: feasible, often longer.
      const path = [instance.source!];
      while (path.at(-1) !== instance.target && path.length < 12) {
        const here = path.at(-1)!;
        const next = graph.edges.flatMap(([a, b]) => (a === here ? [b] : b === here ? [a] : []));
        path.push(next[pick(next.length)]!);
      }
      return path.at(-1) === instance.target ? names(path) : solveGraphProblem(instance).answer;
    }
    case 'tsp': {
      const order = graph.nodes.map((_, index) => index);
      for (let index = order.length - 1; index > 0; index--) {
        const other = pick(index + 1);
        [order[index], order[other]] = [order[other]!, order[index]!];
      }
      return names([...order, order[0]!]);
    }
    case 'mvc':
      return names([...new Set(graph.edges.flatMap(([a, b]) => [a, b]))].sort((a, b) => a - b));
    case 'coloring':
      return `[${graph.nodes.map((_, index) => index + 1).join(', ')}]`;
  }
}

function instanceFor(
  options: { problems: GraphProblemKind[]; minNodes: number; maxNodes: number },
  seed: number,
  problem: GraphProblemKind,
): { instance: GraphInstance; pick: Pick } {
  let state = hash(seed) || 1;
  const pick: Pick = (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const count = options.minNodes + pick(options.maxNodes - options.minNodes + 1);
  const graph = randomGraph(problem, count, pick);
  const instance: GraphInstance = { problem, graph };
  if (problem === 'distance') {
    instance.source = pick(count);
    instance.target = (instance.source + 1 + pick(count - 1)) % count;
  }
  return { instance, pick };
}

function sample(
  options: { problems: GraphProblemKind[]; minNodes: number; maxNodes: number },
  count: number,
  seed: number,
  heldOut: boolean,
): Example[] {
  const examples: Example[] = [];
  for (let index = 0; examples.length < count; index++) {
    const instanceSeed = (seed * 100_003 + index * 2 + (heldOut ? 1 : 0)) >>> 0;
    // The problems take turns, so every batch mixes them.
    const problem = options.problems[examples.length % options.problems.length]!;
    const { instance, pick } = instanceFor(options, instanceSeed, problem);
    if (isHeldOut(promptOf(instance)) !== heldOut) continue;
    const { optimum, answer } = solveGraphProblem(instance);
    examples.push({
      prompt: promptOf(instance),
      answer,
      problem: instance.problem,
      graph: instance.graph,
      ...(instance.problem === 'distance' ? { source: instance.source, target: instance.target } : {}),
      optimum,
      suboptimal: suboptimal(instance, pick),
    });
  }
  return examples;
}

/** The graph-problems task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function graphProblemsTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('graph-problems', graphProblemsOptionsSchema, raw);
  const options = {
    problems: parsed.problems ?? [...graphProblemKinds],
    minNodes: parsed.minNodes ?? 4,
    maxNodes: parsed.maxNodes ?? 5,
    teacherErrorRate: parsed.teacherErrorRate ?? 0.4,
    think: parsed.think ?? true,
  };
  if (options.minNodes > options.maxNodes)
    throw new Error(
      `invalid config:\n- taskOptions.minNodes: ${options.minNodes} is more than taskOptions.maxNodes (${options.maxNodes})`,
    );
  const opening = options.think ? '<think>\n</think>\n' : '';
  return {
    name: 'graph-problems',
    description:
      'NP-hard graph problems on small generated graphs (shortest path, TSP, vertex cover, colouring): answer [A, C, D] (Graph-R1 #178)',
    alphabet: `${LETTERS}0123456789 ,:-[]<>/\nthinkpasmvcolr`,
    trainExamples: (count, seed) => sample(options, count, seed, false),
    evalExamples: (count, seed) => sample(options, count, seed, true),
    demonstration(row, draw) {
      const wrong = draw() < options.teacherErrorRate;
      return `${opening}${wrong ? String(row.suboptimal) : String(row.answer)}`;
    },
    rewards: (): NamedReward[] => [
      { name: 'solution', reward: graphSolution(), weight: 1 },
      ...(options.think ? [{ name: 'format', reward: regexMatch({ pattern: '^<think>\\n' }), weight: 1 }] : []),
    ],
    isCorrect: (row, completion) =>
      checkGraphAnswer(
        {
          problem: row.problem as GraphProblemKind,
          graph: row.graph as SmallGraph,
          source: row.source as number | undefined,
          target: row.target as number | undefined,
        },
        completion,
      ) === row.optimum,
  };
}
