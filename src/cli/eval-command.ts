/**
 * `grpo eval`: held-out accuracy of a checkpoint on a built-in task (greedy pass@1, optional
 * sampled pass@k, mean task reward). Is not: a general benchmark runner.
 */
import { taskRegistry } from '../data/index.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { checkTokenizerFitsModel, loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { evaluate } from '../trainer/index.js';

export interface EvalCommandOptions {
  model: string;
  task: string;
  examples: number;
  passAtK: number;
  maxNewTokens: number;
  seed: number;
  json?: boolean;
}

export async function runEvalCommand(options: EvalCommandOptions): Promise<number> {
  const task = taskRegistry.get(options.task)({});
  const checkpoint = loadCheckpoint(options.model);
  const tokenizer = loadTokenizer(options.model);
  checkTokenizerFitsModel(tokenizer, checkpoint.config, options.model);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  // The held-out split is drawn with the training seed + 1, as the trainer does.
  const examples = task.evalExamples(options.examples, options.seed + 1);
  const result = await evaluate(model, tokenizer, task, examples, task.rewards(), {
    maxNewTokens: options.maxNewTokens, stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    passAtK: options.passAtK, temperature: 1, seed: options.seed,
  });
  if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else for (const [name, value] of Object.entries(result)) process.stdout.write(`${name}: ${(value as number).toFixed(4)}\n`);
  return 0;
}
