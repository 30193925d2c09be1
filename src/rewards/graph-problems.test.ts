/**
 * Graph-R1's reward (#178) and the `graph-problems` task: the authors' scores on hand-built
 * instances (2 for the optimum, 0.5·opt/value or 0.5·(opt/value)² for TSP, −1 otherwise), near
 * misses that must score −1 or partial with the reason each does, the exact solvers never beaten by
 * any feasible answer, and the task's rows (deterministic, held out, options checked).
 */
import { describe, expect, it } from 'vitest';
import { graphProblemsTask } from '../data/tasks/graph-problems.js';
import { rewardFactories } from './factories.js';
import {
  checkGraphAnswer,
  graphSolution,
  solveGraphProblem,
  type GraphInstance,
  type SmallGraph,
} from './graph-problems.js';
import { makeRewardInput, type RewardFn } from './types.js';

const score = (row: Record<string, unknown>, completion: string, options = {}) =>
  graphSolution(options)(makeRewardInput({ prompt: '', completion, row })) as number;

// A square A-B-C-D-A with the diagonal A-C; TSP on the complete graph with these distances.
const square: SmallGraph = {
  nodes: ['A', 'B', 'C', 'D'],
  edges: [
    [0, 1, 1],
    [1, 2, 1],
    [2, 3, 1],
    [0, 3, 1],
    [0, 2, 1],
  ],
};
const tspGraph: SmallGraph = {
  nodes: ['A', 'B', 'C', 'D'],
  edges: [
    [0, 1, 1],
    [0, 2, 5],
    [0, 3, 1],
    [1, 2, 1],
    [1, 3, 5],
    [2, 3, 1],
  ],
};
const rows = {
  tsp: { problem: 'tsp', graph: tspGraph, optimum: 4 }, // A-B-C-D-A = 1+1+1+1
  mvc: { problem: 'mvc', graph: square, optimum: 2 }, // {A, C}
  path: { problem: 'distance', graph: square, source: 1, target: 3, optimum: 2 }, // B-A-D
  color: { problem: 'coloring', graph: square, optimum: 3 }, // the triangle A-B-C needs 3
};

describe('graph-solution (Graph-R1 graph_reward)', () => {
  it("scores the optimum 2 and a feasible suboptimal answer 0.5·opt/value (TSP squared), the authors' numbers", () => {
    expect(score(rows.tsp, '<think>\n</think>\n[A, B, C, D, A]')).toBe(2);
    expect(score(rows.tsp, '[A, C, B, D, A]')).toBe(0.5 * (4 / 12) ** 2); // 5+1+5+1 = 12 → 0.0556
    expect(score(rows.mvc, 'so [A, C]')).toBe(2);
    expect(score(rows.mvc, '[A, B, C]')).toBe(0.5 * (2 / 3));
    expect(score(rows.path, '[B, A, D]')).toBe(2);
    expect(score(rows.path, '[B, C, D]')).toBe(2); // another shortest path
    expect(score(rows.path, '[B, C, A, D]')).toBe(0.5 * (2 / 3));
    expect(score(rows.color, '[1, 2, 3, 2]')).toBe(2);
    expect(score(rows.color, '[1, 2, 3, 4]')).toBe(0.5 * (3 / 4));
  });

  it('near misses: each scores −1 for the reason given, or partial', () => {
    // TSP: the tour does not return to its start
    expect(score(rows.tsp, '[A, B, C, D]')).toBe(-1);
    // TSP: a city visited twice, one never
    expect(score(rows.tsp, '[A, B, C, B, A]')).toBe(-1);
    // TSP: lower-case names never match the authors' pattern [A-Z, ] — no answer at all
    expect(score(rows.tsp, '[a, b, c, d, a]')).toBe(-1);
    // TSP: the last bracket counts, even when an earlier one was optimal
    expect(score(rows.tsp, '[A, B, C, D, A] then [A, C, B, D, A]')).toBe(0.5 * (4 / 12) ** 2);
    // vertex cover: edge C-D left uncovered
    expect(score(rows.mvc, '[A, B]')).toBe(-1);
    // vertex cover: a name not in the graph makes it infeasible
    expect(score(rows.mvc, '[A, C, Z]')).toBe(-1);
    // vertex cover: a repeated name counts twice (the authors' len(node_list)) — partial, not 2
    expect(score(rows.mvc, '[A, C, C]')).toBe(0.5 * (2 / 3));
    // shortest path: B to D is not an edge
    expect(score(rows.path, '[B, D]')).toBe(-1);
    // shortest path: ends at the wrong node
    expect(score(rows.path, '[B, A]')).toBe(-1);
    // shortest path: unknown names are skipped, as the authors' Distance.py does
    expect(score(rows.path, '[B, X, A, D]')).toBe(2);
    // colouring: A and B (adjacent) share colour 1
    expect(score(rows.color, '[1, 1, 2, 3]')).toBe(-1);
    // colouring: one colour short of the node count
    expect(score(rows.color, '[1, 2, 3]')).toBe(-1);
    // no brackets at all
    expect(score(rows.color, 'A is 1, B is 2')).toBe(-1);
  });

  it('takes its scores as options and refuses bad ones by name', () => {
    const options = { exactScore: 1, partialScale: 1, tspExponent: 1, invalidScore: 0 };
    expect(score(rows.tsp, '[A, C, B, D, A]', options)).toBe(4 / 12);
    expect(score(rows.tsp, '[A, B]', options)).toBe(0);
    const factory = rewardFactories.get('graph-solution');
    expect(factory.citation).toMatch(/Graph-R1 \(#178\)/);
    const reward = factory.create({ invalidScore: -2 }) as RewardFn;
    expect(reward(makeRewardInput({ prompt: '', completion: '[A]', row: rows.mvc }))).toBe(-2);
    expect(() => factory.create({ tspExponent: 0 })).toThrow(/reward "graph-solution": bad options: tspExponent/);
    expect(() => factory.create({ bonus: 1 })).toThrow(/bonus/);
    expect(() => score({ ...rows.tsp, optimum: undefined }, '[A]')).toThrow(/column "optimum"/);
    expect(() => score({ ...rows.tsp, problem: 'clique' }, '[A]')).toThrow(/column "problem"/);
  });

  it('the exact solvers: their answer scores 2 and no feasible answer of many random ones beats them', () => {
    const task = graphProblemsTask({ minNodes: 4, maxNodes: 6 });
    let state = 7;
    const random = (n: number) => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return (state >>> 8) % n;
    };
    for (const row of task.trainExamples(40, 9)) {
      const instance = row as unknown as GraphInstance & { optimum: number };
      expect(solveGraphProblem(instance).optimum).toBe(row.optimum);
      expect(score(row, String(row.answer))).toBe(2);
      const { nodes } = instance.graph;
      for (let attempt = 0; attempt < 300; attempt++) {
        const picks = Array.from({ length: 1 + random(nodes.length + 1) }, () => random(nodes.length));
        const answer =
          instance.problem === 'coloring'
            ? `[${nodes.map(() => 1 + random(nodes.length)).join(', ')}]`
            : instance.problem === 'distance'
              ? `[${[instance.source!, ...picks, instance.target!].map((index) => nodes[index]).join(', ')}]`
              : instance.problem === 'tsp'
                ? `[${[...picks, picks[0]!].map((index) => nodes[index]).join(', ')}]`
                : `[${[...new Set(picks)].map((index) => nodes[index]).join(', ')}]`;
        const value = checkGraphAnswer(instance, answer);
        if (value > 0) expect(value).toBeGreaterThanOrEqual(instance.optimum);
      }
    }
  });
});

describe('graph-problems task', () => {
  const task = graphProblemsTask();
  it('is deterministic, cycles through the four problems and holds its evaluation instances out', () => {
    expect(task.trainExamples(12, 3)).toEqual(task.trainExamples(12, 3));
    expect(task.trainExamples(4, 1).map((row) => row.problem)).toEqual(
      expect.arrayContaining(['distance', 'tsp', 'mvc', 'coloring']),
    );
    const train = new Set(task.trainExamples(500, 1).map((row) => row.prompt));
    const held = task.evalExamples(60, 1).map((row) => row.prompt);
    expect(held.filter((prompt) => train.has(prompt))).toEqual([]);
  });
  it("the teacher's mistakes are feasible but suboptimal on most rows; evaluation counts only the optimum", () => {
    const rows = task.trainExamples(40, 2);
    const wrong = rows.map((row) =>
      score(
        row,
        task.demonstration(row, () => 0),
      ),
    );
    expect(wrong.every((value) => value > 0)).toBe(true); // feasible
    expect(wrong.filter((value) => value < 2).length).toBeGreaterThan(rows.length / 2);
    for (const row of rows)
      expect(
        task.isCorrect(
          row,
          task.demonstration(row, () => 0.99),
        ),
      ).toBe(true);
  });
  it('refuses bad options naming the field', () => {
    expect(() => graphProblemsTask({ problems: ['clique'] })).toThrow(/taskOptions\.problems/);
    expect(() => graphProblemsTask({ minNodes: 6, maxNodes: 4 })).toThrow(/taskOptions\.minNodes/);
    expect(() => graphProblemsTask({ size: 4 })).toThrow(/taskOptions\.size: not an option/);
  });
});
