/**
 * Graph-R1's fine-grained reward for NP-hard graph problems (#178, "Graph-R1: Unleashing LLM
 * Reasoning with NP-Hard Graph Problems"): the exact verifiers of four problems on small graphs
 * (shortest path, travelling salesman, minimum vertex cover, graph colouring), their exact solvers
 * (brute force / breadth-first search, fine at ≤ 8 nodes), and the reward built on them.
 *
 * The reward follows the authors' code, github.com/Graph-Reasoner/Graph-R1 at 5b260ed,
 * `verl/verl/utils/reward_score/grapharena_norepeat.py` (`graph_reward`) and the task checkers in
 * `verl/verl/utils/reward_score/tasks/{Distance,TSP,MVC}.py`. The checker returns the solution's
 * value `res` (path hops, tour length, cover size, colours used) or a negative code when the answer
 * is missing or infeasible; with the exact optimum `opt`:
 *   - `res == opt` → 2.0 (`exactScore`);
 *   - a feasible, suboptimal answer of a minimisation problem → 0.5·(opt/res), for TSP 0.5·(opt/res)²
 *     ("a square to make the reward gradient steeper", the authors' comment);
 *   - no answer or an infeasible one → −1.0 (`invalidScore`).
 * The authors' total adds a format score (1 when the completion starts with `<think>\n`): here that
 * is `regex-match` with `pattern: '^<think>\n'`, weighted 1, beside this reward.
 *
 * Checkers, as the authors': the answer is the last `[...]` of the completion, comma-separated node
 * names (TSP: only `[A-Z, ]` inside the brackets). Shortest path skips unknown names (their
 * `Distance.py` does) and counts hops on the unweighted graph; a vertex cover with an unknown name is
 * infeasible, and a repeated name counts twice (their `len(node_list)`). Graph colouring is not one
 * of Graph-R1's tasks; it is added here with the same minimisation rule: the answer lists one colour
 * number per node in the prompt's order, feasible when adjacent nodes differ, valued by the number of
 * distinct colours (optimum = the chromatic number).
 *
 * Is not: GraphArena's real-world graphs (DBpedia, social networks; none downloaded here) or the
 * maximisation tasks (MIS, MCP, …) the authors also train on.
 */
import type { RewardFn } from './types.js';

/** The four problems this file verifies. */
export const graphProblemKinds = ['distance', 'tsp', 'mvc', 'coloring'] as const;
export type GraphProblemKind = (typeof graphProblemKinds)[number];

/** A small undirected graph: node names and weighted edges `[from, to, weight]` by node index. */
export interface SmallGraph {
  nodes: string[];
  edges: Array<[number, number, number]>;
}

/** What a row carries for the reward: the problem, its graph, its endpoints (shortest path) and the optimum. */
export interface GraphInstance {
  problem: GraphProblemKind;
  graph: SmallGraph;
  /** Shortest path only: the endpoints' node indices. */
  source?: number;
  target?: number;
}

/** The checker's verdict when there is no answer (−1 in the authors' code) or an infeasible one (−2). */
const NO_ANSWER = -1;
const INFEASIBLE = -2;

function adjacency(graph: SmallGraph): number[][] {
  const weights = graph.nodes.map(() => graph.nodes.map(() => 0));
  for (const [from, to, weight] of graph.edges) {
    weights[from]![to] = weight;
    weights[to]![from] = weight;
  }
  return weights;
}

/** The content of the last `[...]` (for TSP: the last one holding only capital letters, spaces and commas). */
function lastBracket(completion: string, lettersOnly: boolean): string | null {
  const pattern = lettersOnly ? /\[\s*([A-Z\s,]*)\s*\]/g : /\[(.*?)\]/g;
  const matches = [...completion.matchAll(pattern)];
  return matches.length === 0 ? null : matches.at(-1)![1]!;
}

const nameIndex = (graph: SmallGraph, name: string) => {
  const index = graph.nodes.indexOf(name.trim());
  return index < 0 ? null : index;
};

/**
 * The value of the completion's answer (hops, tour length, cover size or colours used), or −1 when
 * there is no answer and −2 when it is infeasible — the authors' `check_solution`.
 */
export function checkGraphAnswer(instance: GraphInstance, completion: string): number {
  const { graph, problem } = instance;
  const text = lastBracket(completion, problem === 'tsp');
  if (text === null) return NO_ANSWER;
  const names = text.split(',').map((name) => name.trim());
  const weights = adjacency(graph);
  switch (problem) {
    case 'distance': {
      const route = names.map((name) => nameIndex(graph, name)).filter((index): index is number => index !== null);
      if (route.length === 0) return INFEASIBLE;
      if (route[0] !== instance.source || route.at(-1) !== instance.target) return INFEASIBLE;
      for (let step = 0; step + 1 < route.length; step++)
        if (weights[route[step]!]![route[step + 1]!] === 0) return INFEASIBLE;
      return route.length - 1;
    }
    case 'tsp': {
      const route = names.map((name) => nameIndex(graph, name));
      if (route.some((index) => index === null)) return INFEASIBLE;
      const stops = route.slice(0, -1) as number[];
      const visitsAll = stops.length === graph.nodes.length && new Set(stops).size === graph.nodes.length;
      if (!visitsAll || route[0] !== route.at(-1)) return INFEASIBLE;
      let length = 0;
      for (let step = 0; step + 1 < route.length; step++) length += weights[route[step]!]![route[step + 1]!]!;
      return length;
    }
    case 'mvc': {
      const cover = names.map((name) => nameIndex(graph, name));
      if (cover.some((index) => index === null) || cover.length === 0) return INFEASIBLE;
      for (const [from, to] of graph.edges) if (!cover.includes(from) && !cover.includes(to)) return INFEASIBLE;
      return cover.length;
    }
    case 'coloring': {
      const colours = names.map((name) => (/^\d+$/.test(name) ? Number(name) : null));
      if (colours.length !== graph.nodes.length || colours.some((colour) => colour === null)) return INFEASIBLE;
      for (const [from, to] of graph.edges) if (colours[from] === colours[to]) return INFEASIBLE;
      return new Set(colours).size;
    }
  }
}

/** Every permutation of `items` (n ≤ 8 here). */
function permutations(items: number[]): number[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, index) =>
    permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]),
  );
}

/** The exact optimum and one optimal answer in the checker's bracket format. */
export function solveGraphProblem(instance: GraphInstance): { optimum: number; answer: string } {
  const { graph, problem } = instance;
  const count = graph.nodes.length;
  const weights = adjacency(graph);
  const names = (indices: readonly number[]) => `[${indices.map((index) => graph.nodes[index]).join(', ')}]`;
  switch (problem) {
    case 'distance': {
      // Breadth-first search: hops on the unweighted graph, as the authors' checker counts.
      const previous = new Array<number>(count).fill(-1);
      const seen = new Set([instance.source!]);
      for (let frontier = [instance.source!]; frontier.length > 0;) {
        const next: number[] = [];
        for (const node of frontier)
          for (let other = 0; other < count; other++)
            if (weights[node]![other]! > 0 && !seen.has(other)) {
              seen.add(other);
              previous[other] = node;
              next.push(other);
            }
        frontier = next;
      }
      if (!seen.has(instance.target!)) throw new Error('graph-problems: the target is not reachable from the source');
      const path = [instance.target!];
      while (path[0] !== instance.source) path.unshift(previous[path[0]!]!);
      return { optimum: path.length - 1, answer: names(path) };
    }
    case 'tsp': {
      // Fix the first node and try every order of the rest.
      let best = { length: Infinity, route: [] as number[] };
      for (const rest of permutations(Array.from({ length: count - 1 }, (_, index) => index + 1))) {
        const route = [0, ...rest, 0];
        let length = 0;
        for (let step = 0; step + 1 < route.length; step++) length += weights[route[step]!]![route[step + 1]!]!;
        if (length < best.length) best = { length, route };
      }
      return { optimum: best.length, answer: names(best.route) };
    }
    case 'mvc': {
      let best: number[] = graph.nodes.map((_, index) => index);
      for (let mask = 0; mask < 1 << count; mask++) {
        const chosen = Array.from({ length: count }, (_, index) => index).filter((index) => mask & (1 << index));
        if (chosen.length >= best.length) continue;
        if (graph.edges.every(([from, to]) => chosen.includes(from) || chosen.includes(to))) best = chosen;
      }
      return { optimum: best.length, answer: names(best) };
    }
    case 'coloring': {
      // Smallest k with a proper colouring, found by backtracking over nodes in order.
      for (let colours = 1; colours <= count; colours++) {
        const assigned = new Array<number>(count).fill(0);
        const place = (node: number): boolean => {
          if (node === count) return true;
          for (let colour = 1; colour <= colours; colour++) {
            if (
              graph.edges.some(
                ([a, b]) => (a === node && assigned[b] === colour) || (b === node && assigned[a] === colour),
              )
            )
              continue;
            assigned[node] = colour;
            if (place(node + 1)) return true;
            assigned[node] = 0;
          }
          return false;
        };
        if (place(0)) return { optimum: colours, answer: `[${assigned.join(', ')}]` };
      }
      throw new Error('graph-problems: no colouring found'); // unreachable: n colours always suffice
    }
  }
}

/** Options of {@link graphSolution}; the defaults are Graph-R1's. */
export interface GraphSolutionOptions {
  /** Score of an optimal answer (default 2.0). */
  exactScore?: number;
  /** Scale of a feasible, suboptimal answer's ratio opt/res (default 0.5). */
  partialScale?: number;
  /** Power of the ratio for TSP (default 2, "to make the reward gradient steeper"); other problems use 1. */
  tspExponent?: number;
  /** Score of a missing or infeasible answer (default −1.0). */
  invalidScore?: number;
  /** Column holding the problem kind (default `problem`). */
  problemColumn?: string;
  /** Column holding the exact optimum (default `optimum`). */
  optimumColumn?: string;
}

/** The row's instance; throws naming the column when it is missing or malformed. */
export function graphInstanceOf(row: Readonly<Record<string, unknown>>, problemColumn = 'problem'): GraphInstance {
  const problem = row[problemColumn];
  if (typeof problem !== 'string' || !(graphProblemKinds as readonly string[]).includes(problem))
    throw new Error(
      `graph-solution: column "${problemColumn}" must be one of ${graphProblemKinds.join(', ')} (got ${JSON.stringify(problem)})`,
    );
  const graph = row.graph as SmallGraph | undefined;
  if (!graph || !Array.isArray(graph.nodes) || !Array.isArray(graph.edges))
    throw new Error('graph-solution: column "graph" must be {"nodes": [names], "edges": [[from, to, weight], …]}');
  const instance: GraphInstance = { problem: problem as GraphProblemKind, graph };
  if (problem === 'distance') {
    if (typeof row.source !== 'number' || typeof row.target !== 'number')
      throw new Error('graph-solution: a distance row needs numeric columns "source" and "target" (node indices)');
    instance.source = row.source;
    instance.target = row.target;
  }
  return instance;
}

/**
 * Graph-R1's answer reward: 2 for the optimum, 0.5·(opt/res) for a feasible suboptimal answer
 * (TSP: 0.5·(opt/res)²), −1 for a missing or infeasible one.
 * @example graphSolution() // TSP row with optimum 10, completion "[A, B, C, D, A]" of length 20 → 0.5·(10/20)² = 0.125
 */
export function graphSolution({
  exactScore = 2,
  partialScale = 0.5,
  tspExponent = 2,
  invalidScore = -1,
  problemColumn = 'problem',
  optimumColumn = 'optimum',
}: GraphSolutionOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const instance = graphInstanceOf(row, problemColumn);
    const optimum = row[optimumColumn];
    if (typeof optimum !== 'number' || !(optimum > 0))
      throw new Error(`graph-solution: column "${optimumColumn}" must be the positive exact optimum`);
    const value = checkGraphAnswer(instance, completion);
    if (value === optimum) return exactScore;
    if (value <= 0) return invalidScore;
    // Every problem here minimises, so a feasible value is ≥ the optimum and the ratio is in (0, 1).
    return partialScale * (optimum / value) ** (instance.problem === 'tsp' ? tspExponent : 1);
  };
}
