/**
 * A step's logged numbers with the stable names of docs/run-folder.md: reward statistics (overall
 * and per reward, from the first generation round, before any filter, as TRL logs them), the share
 * of zero-variance groups, failed reward calls, and completion lengths.
 *
 * Also the samples.jsonl records of a step, and what a step logs about multi-turn episodes (at the
 * end of this file).
 *
 * Is not: the loss metrics (optimize.ts names those) or the writing of files (run-folder.ts).
 */
import type { RunFolder } from '../run/run-folder.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { PreparedStep } from './grpo-step.js';
import { groupStarts, sampleRows, type StepBatch } from './step-batch.js';
import type { RolloutRow, RolloutSample } from '../rollout/rollout.js';

function meanAndStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, values.length);
  return { mean, std: Math.sqrt(variance) };
}

/**
 * reward/mean, reward/std, reward/fracZeroStd, reward/invalidSamples and reward/<name>/{mean,std,invalid}.
 * The means and deviations are the policy's: an injected ground truth (grpo.groundTruthCompletion)
 * is left out of them, as TempSamp-R1's `gt_log_exclude`, and counted in train/groundTruthRows;
 * fracZeroStd counts the groups as the estimator sees them, the ground truth in.
 */
export function rewardLogMetrics(batch: StepBatch): Record<string, number> {
  const sampled = (_: unknown, i: number) => !batch.samples[i].groundTruth;
  const overall = meanAndStd(Array.from(batch.rewards).filter((r, i) => sampled(r, i) && Number.isFinite(r)));
  let zeroStdGroups = 0;
  groupStarts(batch.groupSizes).forEach((start, g) => {
    const scored = Array.from(batch.rewards.subarray(start, start + batch.groupSizes[g])).filter(Number.isFinite);
    if (scored.every((value) => value === scored[0])) zeroStdGroups++;
  });
  const metrics: Record<string, number> = {
    'reward/mean': overall.mean,
    'reward/std': overall.std,
    'reward/fracZeroStd': zeroStdGroups / Math.max(1, batch.groupSizes.length),
    'reward/invalidSamples': batch.valid.reduce((count, valid) => count + (valid ? 0 : 1), 0),
  };
  const K = batch.rewardNames.length;
  batch.rewardNames.forEach((name, k) => {
    const column = batch.samples
      .flatMap((_, i) => (sampled(_, i) ? [batch.scores[i * K + k]] : []))
      .filter(Number.isFinite);
    const stats = column.length > 0 ? meanAndStd(column) : { mean: NaN, std: NaN }; // logged as null
    metrics[`reward/${name}/mean`] = stats.mean;
    metrics[`reward/${name}/std`] = stats.std;
    metrics[`reward/${name}/invalid`] = batch.failures[name] ?? 0;
  });
  const injected = batch.samples.filter((sample) => sample.groundTruth).length;
  if (injected > 0) metrics['train/groundTruthRows'] = injected;
  return metrics;
}

/**
 * Per-domain numbers of a step whose rows carry a string `domain` column (the multi-domain task,
 * Guru #108): `domain/<name>/reward/mean` (combined reward of that domain's samples) and
 * `domain/<name>/samples`. Empty when no row names a domain.
 */
export function domainMetrics(batch: StepBatch): Record<string, number> {
  const byDomain = new Map<string, number[]>();
  groupStarts(batch.groupSizes).forEach((start, g) => {
    const domain = batch.prompts[g]!.example.domain;
    if (typeof domain !== 'string') return;
    const rewards = Array.from(batch.rewards.subarray(start, start + batch.groupSizes[g]!)).filter(Number.isFinite);
    byDomain.set(domain, [...(byDomain.get(domain) ?? []), ...rewards]);
  });
  const metrics: Record<string, number> = {};
  for (const [domain, rewards] of byDomain) {
    metrics[`domain/${domain}/reward/mean`] = meanAndStd(rewards).mean;
    metrics[`domain/${domain}/samples`] = rewards.length;
  }
  return metrics;
}

/** completions/{meanLength,minLength,maxLength,clippedRatio}. */
export function completionMetrics(batch: StepBatch): Record<string, number> {
  const lengths = batch.samples.map((s) => s.completionIds.length);
  return {
    'completions/meanLength': lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length),
    'completions/minLength': Math.min(...lengths),
    'completions/maxLength': Math.max(...lengths),
    'completions/clippedRatio': batch.samples.filter((s) => s.truncated).length / Math.max(1, lengths.length),
  };
}

/** samples.jsonl lines of a step: its first `groupCount` groups, each completion with its rewards, advantage and errors. */
export function sampleRecords(
  step: number,
  prepared: PreparedStep,
  groupCount: number,
  tokenizer?: TextTokenizer,
  folder?: Pick<RunFolder, 'writeSampleImage'>,
): Record<string, unknown>[] {
  const { batch, signal } = prepared;
  const starts = groupStarts(batch.groupSizes);
  const K = batch.rewardNames.length;
  return batch.prompts.slice(0, groupCount).map((prompt, g) => {
    const members = Array.from({ length: batch.groupSizes[g] }, (_, k) => starts[g] + k);
    return {
      step,
      phase: 'grpo',
      prompt: prompt.text ?? prompt.example.prompt,
      answer: prompt.example.answer,
      // The prompt's images as PNG files in the run folder (paths relative to it), for the dashboard.
      ...(folder && prompt.pictures?.length
        ? { images: prompt.pictures.map((picture, k) => folder.writeSampleImage(`step-${step}-${g}-${k}`, picture)) }
        : {}),
      completions: members.map((i) => ({
        text: batch.samples[i].text,
        reward: Number.isFinite(signal.rewards[i]) ? signal.rewards[i] : null,
        rewards: Object.fromEntries(
          batch.rewardNames.map((name, k) => [
            name,
            Number.isFinite(batch.scores[i * K + k]) ? batch.scores[i * K + k] : null,
          ]),
        ),
        advantage: signal.advantages[i],
        length: batch.samples[i].completionIds.length,
        finishReason: batch.samples[i].episode?.stopReason ?? (batch.samples[i].truncated ? 'length' : 'stop'),
        inLoss: signal.keep[i] === 1,
        ...(batch.samples[i].groundTruth ? { groundTruth: true } : {}),
        ...(batch.errors[i] ? { errors: batch.errors[i] } : {}),
        ...(tokenizer && batch.samples[i].episode
          ? { episode: episodeRecord(batch.samples[i], sampleRows(batch, i), tokenizer) }
          : {}),
      })),
    };
  });
}

// What a step logs about multi-turn episodes: `turns/mean`, `tools/calls/<name>`, `tools/errors`,
// `stop/<reason>` (share of episodes), `tokens/masked_fraction` (observation tokens among all
// completion tokens, every row counted); and each episode's turn-by-turn record for samples.jsonl
// (messages, tool calls with results and errors, and the token segments with their loss mask, so
// a viewer can show masked tokens apart).
//
// Is not: the episode logic (multi-turn-rollout.ts) or the writing of files (run-folder.ts).

/** The agent metrics of a step's episodes; empty when no sample is an episode. */
export function agentMetrics(batch: StepBatch): Record<string, number> {
  const episodes = batch.samples.flatMap((sample) => (sample.episode ? [sample.episode] : []));
  if (episodes.length === 0) return {};
  const metrics: Record<string, number> = {
    'turns/mean': episodes.reduce((total, episode) => total + episode.turns, 0) / episodes.length,
    'tools/errors': 0,
  };
  for (const episode of episodes) {
    metrics[`stop/${episode.stopReason}`] = (metrics[`stop/${episode.stopReason}`] ?? 0) + 1 / episodes.length;
    for (const call of episode.toolCalls) {
      if (call.error !== undefined) metrics['tools/errors']++;
      if (call.name) metrics[`tools/calls/${call.name}`] = (metrics[`tools/calls/${call.name}`] ?? 0) + 1;
    }
  }
  let masked = 0;
  let tokens = 0;
  batch.samples.forEach((_, i) => {
    for (const row of sampleRows(batch, i)) {
      tokens += row.lossMask.length;
      masked += row.lossMask.filter((mask) => mask === 0).length;
    }
  });
  metrics['tokens/masked_fraction'] = masked / Math.max(1, tokens);
  return metrics;
}

/** A row's completion as runs of equal mask: the text of each run and whether it is trained. */
function segments(row: RolloutRow, tokenizer: TextTokenizer): { text: string; trained: boolean }[] {
  const runs: { text: string; trained: boolean }[] = [];
  let start = 0;
  for (let t = 1; t <= row.completionIds.length; t++) {
    if (t < row.completionIds.length && row.lossMask[t] === row.lossMask[start]) continue;
    runs.push({
      text: tokenizer.decode(row.completionIds.slice(start, t), { skipSpecialTokens: false }),
      trained: row.lossMask[start] === 1,
    });
    start = t;
  }
  return runs;
}

/** The samples.jsonl fields of one episode (absent for single-turn samples). */
export function episodeRecord(
  sample: RolloutSample,
  rows: readonly RolloutRow[],
  tokenizer: TextTokenizer,
): Record<string, unknown> | undefined {
  const episode = sample.episode;
  if (!episode) return undefined;
  return {
    turns: episode.turns,
    stopReason: episode.stopReason,
    turnRewards: episode.turnRewards,
    messages: episode.messages.map((message) => ({ role: message.role, content: message.content })),
    toolCalls: episode.toolCalls.map((call) => ({
      turn: call.turn,
      name: call.name,
      arguments: call.arguments,
      result: call.result,
      ...(call.error !== undefined ? { error: call.error } : {}),
    })),
    rows: rows.map((row) => ({ segments: segments(row, tokenizer) })),
  };
}
