/**
 * Registry entries of the application-paper rewards of issue 33 (Guru #108, WirelessMathLM #221,
 * Shop-R1 #173, PageLLM #170, RLPrompt #105, StealthRL #34, AlphaDrive #69): each a name, a one-line description, its paper and a
 * zod schema for its options, as `factories.ts` registers the other built-ins. Kept apart so that
 * file stays short.
 *
 * Is not: the rewards themselves (each in its own file) nor the registry (factories.ts adds these).
 */
import { z } from 'zod';
import { domainRouter } from './domain-router.js';
import { wirelessMath } from './wireless-math.js';
import { rlpromptClassification } from './rlprompt.js';
import { stealthrl } from './stealthrl.js';
import { planFormat, planPath, planSpeed } from './driving-plan.js';
import { define, type RewardFactory } from './factory-registry.js';
import type { Reward } from './types.js';

const column = z.string().min(1);

/** The application rewards; `create` builds another built-in by name (the domain router's routes). */
export function applicationRewardFactories(create: (name: string, options: unknown) => Reward): RewardFactory[] {
  return [
    define(
      'domain-router',
      "scores each row with the reward of its domain (the row's `domain` column; `math__x` also matches route `math`); an unrouted domain is an error unless unknownDomainScore is set",
      'Guru (#108) per-domain rewards; github.com/LLM360/Reasoning360 verl/utils/reward_score default_compute_score',
      z
        .object({
          routes: z
            .record(
              z.string().min(1),
              z.object({ name: z.string().min(1), options: z.record(z.string(), z.unknown()).optional() }).strict(),
            )
            .refine((routes) => Object.keys(routes).length > 0, 'name at least one domain'),
          domainColumn: column.optional(),
          unknownDomainScore: z.number().finite().optional(),
        })
        .strict(),
      ({ routes, ...options }) =>
        domainRouter({
          ...options,
          routes: Object.fromEntries(
            Object.entries(routes).map(([domain, route]) => {
              if (route.name === 'domain-router')
                throw new Error(`reward "domain-router": routes.${domain} routes to itself`);
              return [domain, create(route.name, route.options ?? {})];
            }),
          ),
        }),
      // A route's columns are not required: rows of other domains need not have them.
      { domainColumn: 'domain' },
    ),
    define(
      'wireless-math',
      'binary verification of a WirelessMathBench-XL answer: the option letter, or every [MASK] blank as a \\boxed{} expression equal to the gold one (symbolically): 1/0',
      'WirelessMathLM (#221) binary verification reward; WirelessMATHBench-XL format (docs/paper-recipes.md)',
      z.object({ answerColumn: column.optional(), typeColumn: column.optional() }).strict(),
      wirelessMath,
      { answerColumn: 'answer', typeColumn: 'type' },
    ),
    define(
      'rlprompt-classification',
      "RLPrompt's reward of a written prompt: a frozen model's mean piecewise gap p(label) − max other p, ×200 when positive, ×180 when not, z-scored among the prompts of one input (group reward)",
      'RLPrompt (#105); github.com/mingkaid/rl-prompt examples/few-shot-classification/fsc_reward.py (docs/paper-recipes.md)',
      z
        .object({
          examplesColumn: column.optional(),
          modelColumn: column.optional(),
          correctCoefficient: z.number().positive().optional(),
          incorrectCoefficient: z.number().positive().optional(),
          zscore: z.boolean().optional(),
        })
        .strict(),
      rlpromptClassification,
      { modelColumn: 'taskModel', examplesColumn: 'examples' },
    ),
    define(
      'stealthrl',
      "StealthRL's paraphrase-attack reward: α·z(1 − p_ens) + β·ROUGE-L(source, paraphrase), p_ens a word- and a character-n-gram logistic detector made here (0.6/0.4), z a running z-score clipped to ±3; −0.5 under 10 words or over 3× the source's",
      'StealthRL (#34, arXiv 2602.08934) eq. 1–3; github.com/suraj-ranganath/StealthRL stealthrl/tinker/reward.py, configs/tinker_mage_10k.yaml (docs/paper-recipes.md)',
      z
        .object({
          sourceColumn: column.optional(),
          detectorWeight: z.number().finite().optional(),
          semanticWeight: z.number().finite().optional(),
          ensembleWeights: z
            .object({ word: z.number().min(0), char: z.number().min(0) })
            .strict()
            .optional(),
          detectorZscore: z.boolean().optional(),
          semanticNormalizeMin: z.number().min(0).lt(1).optional(),
          minWords: z.number().int().min(0).optional(),
          maxLengthRatio: z.number().positive().optional(),
          invalidScore: z.number().finite().optional(),
          detectorSeed: z.number().int().min(0).optional(),
        })
        .strict(),
      stealthrl,
      { sourceColumn: 'source' },
    ),
    ...(['speed', 'path'] as const).map((kind) =>
      define(
        `plan-${kind}`,
        `AlphaDrive's ${kind}-planning reward: F1 of the <answer> plan's ${kind} meta-actions × their mean action weight, ±0.4 when no earlier completion of the group planned any of them`,
        `AlphaDrive (#69, arXiv 2503.07608) plan_${kind}_reward; github.com/hustvl/AlphaDrive src/r1-v/src/open_r1/grpo.py (docs/paper-recipes.md)`,
        z
          .object({
            solutionColumn: column.optional(),
            diversityWeight: z.number().finite().min(0).optional(),
            actionWeights: z.record(z.string().min(1), z.number().finite().min(0)).optional(),
          })
          .strict(),
        kind === 'speed' ? planSpeed : planPath,
        { solutionColumn: 'solution' },
      ),
    ),
    define(
      'plan-format',
      "AlphaDrive's planning format reward: 1 when the whole completion is <think>…</think> then <answer>…</answer>, else 0",
      'AlphaDrive (#69, arXiv 2503.07608) plan_format_reward; github.com/hustvl/AlphaDrive src/r1-v/src/open_r1/grpo.py',
      z.object({}).strict(),
      planFormat,
    ),
  ];
}
