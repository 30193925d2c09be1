/**
 * Named recipes as partial configs of the algorithm section: each names only registered functions
 * and their options, so a preset's loss pipeline is exactly the composition it lists (no special
 * cases in the loop; presets.test.ts checks that). User fields win over the preset's.
 *
 * Is not: tuned hyper-parameters for any model size; the values are the papers' published defaults.
 */

type PartialConfig = Record<string, unknown>;

const presets: Record<string, { description: string; config: PartialConfig }> = {
  grpo: {
    description: 'GRPO as in DeepSeekMath: group z-score, PPO clip 0.2, seq-mean-token-mean, k3 KL β=0.04',
    config: {
      algorithm: {
        advantage: 'grpo',
        loss: 'ppo-clip',
        lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.2 },
        aggregation: 'seq-mean-token-mean',
        klCoefficient: 0.04,
        klEstimator: 'k3',
      },
    },
  },
  'dr-grpo': {
    description: 'Dr. GRPO: mean-centred advantage (no std), constant-normaliser aggregation, no KL',
    config: {
      algorithm: {
        advantage: 'dr-grpo',
        loss: 'ppo-clip',
        lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.2 },
        aggregation: 'seq-mean-token-sum-norm',
        klCoefficient: 0,
      },
    },
  },
  dapo: {
    description:
      'DAPO: clip-higher (0.2 / 0.28), token-mean, dynamic sampling (drop zero-variance groups), truncated completions masked, no KL',
    config: {
      algorithm: {
        advantage: 'grpo',
        loss: 'ppo-clip',
        lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.28 },
        aggregation: 'token-mean',
        klCoefficient: 0,
        groupFilter: 'dynamic-sampling',
        maskTruncated: true,
      },
    },
  },
  gspo: {
    description: 'GSPO: sequence-level (length-normalised) ratio, clip 3e-4 / 4e-4, seq-mean-token-mean, no KL',
    config: {
      algorithm: {
        advantage: 'grpo',
        loss: 'gspo',
        lossOptions: { epsilonLow: 3e-4, epsilonHigh: 4e-4 },
        aggregation: 'seq-mean-token-mean',
        klCoefficient: 0,
      },
    },
  },
  cispo: {
    description: 'CISPO (MiniMax-M1): clipped, stop-gradient IS weight on REINFORCE, token-mean, no KL',
    config: {
      algorithm: {
        advantage: 'grpo',
        loss: 'cispo',
        lossOptions: { capMode: 'relative', epsilonHigh: 0.28 },
        aggregation: 'token-mean',
        klCoefficient: 0,
      },
    },
  },
  rloo: {
    description: 'RLOO: leave-one-out baseline, PPO clip 0.2, token-mean, no KL',
    config: {
      algorithm: {
        advantage: 'rloo',
        loss: 'ppo-clip',
        lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.2 },
        aggregation: 'token-mean',
        klCoefficient: 0,
      },
    },
  },
};

export function presetNames(): string[] {
  return Object.keys(presets);
}

export function presetList(): { name: string; description: string }[] {
  return Object.entries(presets).map(([name, { description }]) => ({ name, description }));
}

export function presetConfig(name: string): PartialConfig {
  const preset = presets[name];
  if (!preset) throw new Error(`unknown preset "${name}"; known presets: ${presetNames().join(', ')}`);
  return structuredClone(preset.config);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep merge where `override` wins; arrays and scalars are replaced, objects merged. */
export function mergeConfig(base: PartialConfig, override: PartialConfig): PartialConfig {
  const result: PartialConfig = { ...base };
  for (const [key, value] of Object.entries(override)) {
    result[key] =
      isPlainObject(value) && isPlainObject(result[key]) ? mergeConfig(result[key] as PartialConfig, value) : value;
  }
  return result;
}

export function applyPreset(name: string, config: PartialConfig): PartialConfig {
  return mergeConfig(presetConfig(name), config);
}
