/**
 * Public API of the data layer: the Task interface, the built-in tasks by name, and dataset readers.
 * Is not: anything about tensors or models.
 */
import { additionTask, type AdditionOptions } from './tasks/addition.js';
import type { Task } from './task.js';

export { parseTaskOptions, type Example, type Task } from './task.js';
export { additionOptionsSchema, additionTask, withoutCarry, type AdditionOptions } from './tasks/addition.js';

type TaskFactory = (options: Record<string, unknown>) => Task;

const tasks = new Map<string, { create: TaskFactory; description: string }>([
  ['addition', { create: (options) => additionTask(options as AdditionOptions), description: 'two-digit addition, SFT from a carry-forgetting teacher, GRPO with a verifier' }],
]);

/** Built-in tasks by name; an unknown name lists the known ones. */
export const taskRegistry = {
  names: (): string[] => [...tasks.keys()],
  get(name: string): TaskFactory {
    const entry = tasks.get(name);
    if (!entry) throw new Error(`unknown task "${name}"; known tasks: ${[...tasks.keys()].join(', ')}`);
    return entry.create;
  },
  list: () => [...tasks.entries()].map(([name, { description }]) => ({ name, description })),
};
