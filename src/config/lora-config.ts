/**
 * The `lora` section of the trainer config (zod, a doc line per field): LoRA adapters in PEFT's
 * terms (r, lora_alpha, target_modules, use_rslora) instead of full fine-tuning.
 *
 * Is not: the adapters (model/lora.ts) or where they are attached (setup.ts).
 */
import { z } from 'zod';
import { LORA_MODULES } from '../model/lora.js';

const LORA_MODULE_NAMES = Object.keys(LORA_MODULES);

export const loraSchema = z
  .object({
    rank: z
      .number()
      .int()
      .min(1)
      .max(4096, 'must be at most 4096')
      .default(8)
      .describe('r: the rank of every adapter (A is [r, in], B is [out, r]).'),
    alpha: z
      .number()
      .positive()
      .default(16)
      .describe('lora_alpha: the update is scaled by alpha/rank (alpha/√rank with rsLora).'),
    dropout: z
      .number()
      .min(0)
      .lt(1, 'must be below 1')
      .default(0)
      .describe(
        'lora_dropout: inverted dropout on each adapter input x before A (the base product never sees it), only in training forward passes (never in rollout, scoring, old-logprob or reference passes). Masks come from the run seed, step, micro-batch and module, so recomputed layers and resumed runs draw the same ones.',
      ),
    targetModules: z
      .union([z.string(), z.array(z.string()).min(1)])
      .default('all-linear')
      .superRefine((value, context) => {
        // One message naming the bad module, rather than zod's "Invalid input" for a failed union.
        const unknown = (Array.isArray(value) ? value : [value]).filter(
          (name) => !(LORA_MODULE_NAMES as string[]).includes(name) && !(name === 'all-linear' && value === name),
        );
        if (unknown.length > 0)
          context.addIssue({
            code: 'custom',
            message: `unknown module "${unknown[0]}"; give 'all-linear' or a list of ${LORA_MODULE_NAMES.join(', ')}`,
          });
      })
      .describe(
        "Linear layers that get adapters: 'all-linear' (q, k, v, o, gate, up and down projections) or a list such as ['q_proj', 'v_proj'].",
      ),
    learningRate: z
      .number()
      .positive()
      .optional()
      .describe('Peak learning rate of both phases while LoRA is on; absent = sft.learningRate and grpo.learningRate.'),
    rsLora: z.boolean().default(false).describe('rsLoRA: scale by alpha/√rank instead of alpha/rank.'),
    baseDtype: z
      .enum(['auto', 'float32', 'bfloat16'])
      .default('auto')
      .describe(
        "How the frozen base's q/k/v/o/gate/up/down weights are held in memory: 'bfloat16' halves them (the native backend widens them inside its matrix product, others widen each matrix to float32 per product; a float32 checkpoint is rounded), 'float32' keeps them as loaded, 'auto' is bfloat16 when the checkpoint stores them all as BF16 (no rounding) and float32 otherwise. Embeddings, norms and the adapters stay float32.",
      ),
  })
  .strict();
