/**
 * What a step logs about multi-turn episodes: `turns/mean`, `tools/calls/<name>`, `tools/errors`,
 * `stop/<reason>` (share of episodes), `tokens/masked_fraction` (observation tokens among all
 * completion tokens, every row counted); and each episode's turn-by-turn record for samples.jsonl
 * (messages, tool calls with results and errors, and the token segments with their loss mask, so
 * a viewer can show masked tokens apart).
 *
 * Is not: the episode logic (multi-turn-rollout.ts) or the writing of files (run-folder.ts).
 */
import type { TextTokenizer } from '../model/tokenizer.js';
import type { RolloutRow, RolloutSample } from '../rollout/rollout.js';
import { sampleRows, type StepBatch } from './step-batch.js';

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
