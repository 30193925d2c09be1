/**
 * A step's logged numbers with the stable names of docs/run-folder.md: reward statistics (overall
 * and per reward, from the first generation round, before any filter, as TRL logs them), the share
 * of zero-variance groups, failed reward calls, and completion lengths.
 *
 * Also the samples.jsonl records of a step.
 *
 * Is not: the loss metrics (optimize.ts names those) or the writing of files (run-folder.ts).
 */
import type { RunFolder } from '../run/run-folder.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import { episodeRecord } from './agent-metrics.js';
import type { PreparedStep } from './grpo-step.js';
import { groupStarts, sampleRows, type StepBatch } from './step-batch.js';

function meanAndStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, values.length);
  return { mean, std: Math.sqrt(variance) };
}

/** reward/mean, reward/std, reward/fracZeroStd, reward/invalidSamples and reward/<name>/{mean,std,invalid}. */
export function rewardLogMetrics(batch: StepBatch): Record<string, number> {
  const overall = meanAndStd(Array.from(batch.rewards).filter(Number.isFinite));
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
    const column = batch.samples.map((_, i) => batch.scores[i * K + k]).filter(Number.isFinite);
    const stats = column.length > 0 ? meanAndStd(column) : { mean: NaN, std: NaN }; // logged as null
    metrics[`reward/${name}/mean`] = stats.mean;
    metrics[`reward/${name}/std`] = stats.std;
    metrics[`reward/${name}/invalid`] = batch.failures[name] ?? 0;
  });
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
        ...(batch.errors[i] ? { errors: batch.errors[i] } : {}),
        ...(tokenizer && batch.samples[i].episode
          ? { episode: episodeRecord(batch.samples[i], sampleRows(batch, i), tokenizer) }
          : {}),
      })),
    };
  });
}
