/**
 * The run folder (docs/run-folder.md): config.json, metrics.jsonl, samples.jsonl, summary.json and
 * checkpoints/step-N/ (HF layout + optimizer.safetensors + trainer-state.json), written so a kill at
 * any moment loses nothing that was saved: JSON files are replaced by rename, a checkpoint folder
 * only gets its final name once complete, and on resume log lines past the checkpoint are dropped.
 *
 * Is not: the training loop. It only reads and writes files.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { saveCheckpoint } from '../model/checkpoint.js';
import type { ModelConfig } from '../model/config.js';
import { readSafetensors, writeSafetensors, type StoredTensor } from '../model/safetensors.js';
import type { AdamW, AdamWState } from '../nn/index.js';

/** Counters a resumed run needs besides weights and optimiser moments. */
export interface TrainerState {
  /** Global optimiser steps completed (SFT and GRPO together). */
  step: number;
  phase: 'sft' | 'grpo' | 'done';
  /** Steps completed within the phase. */
  phaseStep: number;
  consecutiveSkips: number;
  evalBefore: Record<string, number> | null;
  /** Extra JSON state of stateful parts (e.g. single-stream baselines). */
  extra: Record<string, unknown>;
}

export function writeJsonAtomically(file: string, value: unknown): void {
  const temporary = `${file}.tmp-${process.pid}`;
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(temporary, file);
}

export class RunFolder {
  readonly metricsFile: string;
  readonly samplesFile: string;
  readonly checkpointsDirectory: string;

  constructor(readonly directory: string) {
    mkdirSync(directory, { recursive: true });
    this.metricsFile = join(directory, 'metrics.jsonl');
    this.samplesFile = join(directory, 'samples.jsonl');
    this.checkpointsDirectory = join(directory, 'checkpoints');
  }

  logMetrics(record: Record<string, unknown>): void {
    appendFileSync(this.metricsFile, `${JSON.stringify(record, (_key, value) => (typeof value === 'number' && !Number.isFinite(value) ? null : value))}\n`);
  }

  logSamples(record: Record<string, unknown>): void {
    appendFileSync(this.samplesFile, `${JSON.stringify(record)}\n`);
  }

  writeSummary(summary: Record<string, unknown>): void {
    writeJsonAtomically(join(this.directory, 'summary.json'), summary);
  }

  readSummary(): Record<string, unknown> {
    const file = join(this.directory, 'summary.json');
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  }

  /** Steps of the complete checkpoints, ascending. */
  checkpointSteps(): number[] {
    if (!existsSync(this.checkpointsDirectory)) return [];
    return readdirSync(this.checkpointsDirectory)
      .map((name) => /^step-(\d+)$/.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => Number(match[1]))
      .filter((step) => existsSync(join(this.checkpointsDirectory, `step-${step}`, 'trainer-state.json')))
      .sort((a, b) => a - b);
  }

  /** Writes checkpoints/step-N atomically and keeps only the `keepLast` newest. */
  saveCheckpoint(input: {
    config: ModelConfig;
    tensors: Map<string, StoredTensor>;
    optimizer: AdamW;
    state: TrainerState;
    extraFiles?: Record<string, string>;
    sourceDirectory?: string;
    keepLast: number;
  }): string {
    mkdirSync(this.checkpointsDirectory, { recursive: true });
    const final = join(this.checkpointsDirectory, `step-${input.state.step}`);
    const partial = join(this.checkpointsDirectory, `.partial-step-${input.state.step}`);
    rmSync(partial, { recursive: true, force: true });
    saveCheckpoint(partial, { config: input.config, tensors: input.tensors, sourceDir: input.sourceDirectory, extraFiles: input.extraFiles });
    writeSafetensors(join(partial, 'optimizer.safetensors'), optimizerTensors(input.optimizer.getState()));
    writeJsonAtomically(join(partial, 'trainer-state.json'), { ...input.state, optimizerStep: input.optimizer.stepCount });
    rmSync(final, { recursive: true, force: true });
    renameSync(partial, final);
    for (const old of this.checkpointSteps().slice(0, -input.keepLast)) {
      rmSync(join(this.checkpointsDirectory, `step-${old}`), { recursive: true, force: true });
    }
    return final;
  }

  /** Reads a checkpoint's trainer state and optimiser state. */
  loadTrainingState(step: number): { state: TrainerState; optimizer: AdamWState; directory: string } {
    const directory = join(this.checkpointsDirectory, `step-${step}`);
    const saved = JSON.parse(readFileSync(join(directory, 'trainer-state.json'), 'utf8')) as TrainerState & { optimizerStep: number };
    const tensors = readSafetensors(join(directory, 'optimizer.safetensors'));
    const moments: AdamWState['moments'] = {};
    for (const [name, stored] of tensors) {
      const match = /^(first|second)\.(.+)$/.exec(name);
      if (!match) continue;
      moments[match[2]] ??= { first: new Float32Array(0), second: new Float32Array(0) };
      moments[match[2]][match[1] as 'first' | 'second'] = stored.data;
    }
    return { state: saved, optimizer: { step: saved.optimizerStep, moments }, directory };
  }

  /** Drops log lines written after `step` (they belong to work the checkpoint does not hold). */
  truncateLogsAfter(step: number): void {
    for (const file of [this.metricsFile, this.samplesFile]) {
      if (!existsSync(file)) continue;
      const kept = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => {
          if (!line.trim()) return false;
          try {
            return (JSON.parse(line) as { step?: number }).step! <= step;
          } catch {
            return false; // a line cut short by the kill
          }
        });
      writeFileSync(file, kept.length ? `${kept.join('\n')}\n` : '');
    }
  }
}

function optimizerTensors(state: AdamWState): Map<string, StoredTensor> {
  const tensors = new Map<string, StoredTensor>();
  for (const [name, { first, second }] of Object.entries(state.moments)) {
    tensors.set(`first.${name}`, { shape: [first.length], data: first });
    tensors.set(`second.${name}`, { shape: [second.length], data: second });
  }
  return tensors;
}
