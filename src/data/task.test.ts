/**
 * `drawOnce`: a run's repeated asks for the same rows draw them once, each caller with its own
 * array; the task's other members (properties, methods that read `this`) are its own.
 */
import { describe, expect, it } from 'vitest';
import { drawOnce, type Example, type Task } from './task.js';

function countingTask() {
  const calls: string[] = [];
  const task: Task & { calls: string[]; suffix: string } = {
    name: 'counting',
    description: 'rows that count their draws',
    alphabet: '0123456789',
    calls,
    suffix: '!',
    trainExamples(count, seed) {
      calls.push(`train ${count} ${seed}`);
      return Array.from({ length: count }, (_, i): Example => ({ prompt: `${seed}-${i}` }));
    },
    evalExamples(count, seed) {
      calls.push(`eval ${count} ${seed}`);
      return Array.from({ length: count }, (_, i): Example => ({ prompt: `held ${seed}-${i}` }));
    },
    demonstration(example) {
      return `${String(example.prompt)}${this.suffix}`;
    },
    rewards: () => [],
    isCorrect: () => true,
  };
  return task;
}

describe('drawOnce', () => {
  it('draws each (count, seed) once and hands every caller its own array of the same rows', () => {
    const inner = countingTask();
    const task = drawOnce(inner);
    const first = task.trainExamples(3, 7);
    const second = task.trainExamples(3, 7);
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    second.pop(); // a caller's own array
    expect(task.trainExamples(3, 7)).toHaveLength(3);
    expect(second[0]).toBe(first[0]);
    task.trainExamples(4, 7);
    task.evalExamples(3, 7);
    task.evalExamples(3, 7);
    expect(inner.calls).toEqual(['train 3 7', 'train 4 7', 'eval 3 7']);
  });

  it("keeps the task's own properties and methods", () => {
    const task = drawOnce(countingTask());
    expect([task.name, task.alphabet]).toEqual(['counting', '0123456789']);
    expect(task.demonstration({ prompt: 'a' }, Math.random)).toBe('a!');
  });
});
