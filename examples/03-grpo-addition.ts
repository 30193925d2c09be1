/**
 * The built-in default run through the library API instead of the CLI: SFT on two-digit addition
 * from a teacher that often forgets the carry, then GRPO with the verifier. A shorter schedule than
 * `npm start` so it finishes in about a minute. Run: `npx tsx examples/03-grpo-addition.ts`
 */
import { createRunContext, resolveConfig, train } from '../src/index.js';

const config = resolveConfig({
  preset: 'dr-grpo', // any preset works: grpo, dr-grpo, dapo, gspo, cispo, rloo
  sft: { steps: 300 },
  grpo: { steps: 40 },
  evaluation: { examples: 100, every: 0 },
  logging: { runName: `example-addition-${Date.now()}` },
});
const context = createRunContext(config);
const result = await train(context, { runDirectory: `runs/${config.logging.runName}` });
console.log(
  `held-out accuracy: after SFT ${result.evalBefore?.['eval/accuracy']}, after GRPO ${result.evalAfter?.['eval/accuracy']}`,
);
