/**
 * Paraphrase attacks on an AI-text detector, for StealthRL (#34, Ranganath et al. 2026, arXiv
 * 2602.08934): each row is a generated sentence in a "machine" register (an LLM-style opener, adverb
 * and closer around a plain meaning); the policy rewrites it so that a detector ensemble made here
 * (two logistic regressions, src/rewards/stealthrl.ts) no longer flags it while the meaning stays.
 * Reward: `stealthrl`, the paper's α·z(1 − p_ens) + β·sim with its length validity check.
 *
 * Why GRPO has work: the SFT teacher writes the plain sentence, but on `taskOptions.teacherErrorRate`
 * of its demonstrations it slips, half the time copying the source (still flagged) and half the time
 * changing the subject (evades, meaning lost). Correct (held-out accuracy): the ensemble's AI
 * probability is below 0.5 and every content word of the source (subject, verb, object, place, time)
 * is in the paraphrase.
 *
 * Is not: MAGE or any real text; the registers are a fixed small vocabulary, so the detectors are far
 * easier to fool than RoBERTa or Fast-DetectGPT.
 */
import { z } from 'zod';
import {
  ensembleProbability,
  machineSentence,
  plainSentence,
  seededPick,
  stealthMeaning,
  stealthrl,
  type StealthMeaning,
} from '../../rewards/stealthrl.js';
import type { NamedReward } from '../../rewards/types.js';
import { textHash } from '../generated-split.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `paraphraseEvasionTask` accepts (config `taskOptions`); unknown keys are refused. */
export const paraphraseEvasionOptionsSchema = z
  .object({
    /** Share of SFT demonstrations the teacher gets wrong (default 0.3). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

const meaningKey = (meaning: StealthMeaning) => Object.values(meaning).join(' ');

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const pick = seededPick(seed * 2654435761 + (heldOut ? 17 : 0));
  const rows: Example[] = [];
  while (rows.length < count) {
    const meaning = stealthMeaning(pick);
    // About one meaning in eight is held out, so no held-out meaning is ever trained on.
    if ((textHash(meaningKey(meaning)) % 8 === 0) !== heldOut) continue;
    const source = machineSentence(meaning, pick);
    rows.push({ prompt: `paraphrase: ${source}\n`, source, meaning });
  }
  return rows;
}

/** Whether the paraphrase evades the ensemble (p_ens < 0.5) and keeps every content word of the meaning. */
export function evadesAndKeepsMeaning(completion: string, meaning: StealthMeaning): boolean {
  const words = new Set(completion.trim().split(/\s+/));
  return ensembleProbability(completion) < 0.5 && Object.values(meaning).every((word) => words.has(word));
}

/** The paraphrase-evasion task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function paraphraseEvasionTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('paraphrase-evasion', paraphraseEvasionOptionsSchema, raw);
  const teacherErrorRate = parsed.teacherErrorRate ?? 0.3;
  const alphabet = [
    ...new Set(
      sample(400, 1, false)
        .map((row) => `${row.prompt}${row.source as string}`)
        .join(''),
    ),
  ];
  return {
    name: 'paraphrase-evasion',
    description: 'rewrite a machine-register sentence so a detector made here misses it, meaning kept (StealthRL #34)',
    alphabet: alphabet.sort().join(''),
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration: (row, draw) => {
      const meaning = row.meaning as StealthMeaning;
      if (draw() >= teacherErrorRate) return plainSentence(meaning);
      // Slips: copy the flagged source, or change the subject (a fluent evasion with another meaning).
      if (draw() < 0.5) return row.source as string;
      const subject = meaning.subject === 'farmer' ? 'baker' : 'farmer';
      return plainSentence({ ...meaning, subject });
    },
    rewards: (): NamedReward[] => [{ name: 'stealthrl', reward: stealthrl(), weight: 1 }],
    isCorrect: (row, completion) => evadesAndKeepsMeaning(completion, row.meaning as StealthMeaning),
  };
}
