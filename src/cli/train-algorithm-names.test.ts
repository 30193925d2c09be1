/**
 * `grpo train --set algorithm.<field>=NAME` for every name `grpo list` offers: each either completes
 * a short run (metrics written, summary finished) or is refused before any model is loaded, with
 * one line naming the field and what is missing. "Before any model is loaded" is shown by pointing
 * model.checkpoint at a folder that does not exist: the refusal must be about the algorithm, never
 * about the missing checkpoint.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { advantageEstimators, groupFilters, policyLosses, promptSelectors } from '../algorithms/index.js';
import { taskRegistry } from '../data/index.js';
import { runTrainCommand } from './train-command.js';
import { sharedData, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-train-command-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const tiny = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=0',
  'grpo.steps=1',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=3',
  'evaluation.examples=4',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

/** Names refused as they stand, with what the refusal must say. */
const refused: Record<string, RegExp> = {
  'advantage=stratified': /^- algorithm\.advantageOptions\.(alpha|strataFrom): .*stratified/m,
  'advantage=seed-grpo': /^- algorithm\.advantageOptions\.alpha: .*seed-grpo/m,
  'advantage=s-grpo':
    /^- algorithm\.advantage: s-grpo scores a group of serial early exits .* provides: \['serialExits'\]/m,
  'loss=dispo': /^- algorithm\.lossOptions\.(positiveBounds|negativeBounds): .*dispo/m,
  'loss=trpa':
    /^- algorithm\.advantage: the trpa loss reads each completion's raw reward .* use algorithm\.advantage "trpa"/m,
  'loss=dno': /^- algorithm\.lossOptions\.eta: the dno loss needs η/m,
  'advantage=trust-grpo':
    /^- algorithm\.advantageOptions\.thinkingReward: trust-grpo needs the name of the run reward/m,
  'advantage=prof': /^- algorithm\.advantageOptions\.(processReward|removePerGroup): .*prof/m,
  'advantage=zoom-zero':
    /^- algorithm\.advantageOptions\.markerIds: zoom-zero needs the token ids of the grounding span marker/m,
};

const cases: [string, string][] = [
  ...advantageEstimators.names().map((name) => ['advantage', name] as [string, string]),
  ...policyLosses.names().map((name) => ['loss', name] as [string, string]),
  ...groupFilters.names().map((name) => ['groupFilter', name] as [string, string]),
  ...promptSelectors.names().map((name) => ['promptSelector', name] as [string, string]),
];

describe('grpo train --set algorithm.<field>=NAME for every listed name', () => {
  it.each(cases)('algorithm.%s=%s runs or is refused before any model is loaded', async (field, name) => {
    const runName = `${field}-${name}`;
    const expectation = refused[`${field}=${name}`];
    if (expectation) {
      const attempt = runTrainCommand({
        set: [...tiny, `algorithm.${field}=${name}`, 'model.checkpoint="/nonexistent/checkpoint"'],
        runName,
        quiet: true,
      });
      await expect(attempt).rejects.toThrow(expectation);
      await expect(attempt).rejects.not.toThrow(/nonexistent/);
      expect(existsSync(join(scratch, runName))).toBe(false);
      return;
    }
    expect(await runTrainCommand({ set: [...tiny, `algorithm.${field}=${name}`], runName, quiet: true })).toBe(0);
    const metrics = readFileSync(join(scratch, runName, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(metrics.filter((m) => 'train/samples' in m)).toHaveLength(1); // one GRPO step (dynamic sampling may keep no group of a random model)
    expect(JSON.parse(readFileSync(join(scratch, runName, 'summary.json'), 'utf8')).status).toBe('finished');
  });

  it('an unknown option lists the options the part knows', async () => {
    const attempt = runTrainCommand({
      set: [...tiny, 'algorithm.lossOptions.epsilonHihg=0.3'],
      runName: 'typo',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(
      /algorithm\.lossOptions: policy loss "ppo-clip" has no option "epsilonHihg"; known: epsilonLow, epsilonHigh, dualClip/,
    );
  });

  it('the refused names run once given what they need', async () => {
    for (const [runName, extra] of [
      [
        'stratified-ok',
        ['algorithm.advantage=stratified', 'algorithm.advantageOptions={"alpha":0.5,"strataFrom":"row.a"}'],
      ],
      ['seed-ok', ['algorithm.advantage=seed-grpo', 'algorithm.advantageOptions={"alpha":0.5}']],
      [
        'dispo-ok',
        ['algorithm.loss=dispo', 'algorithm.lossOptions={"positiveBounds":[0.2,0.3],"negativeBounds":[0.2,0.3]}'],
      ],
      // TRPA's loss reads the reference's log-probs at β = 0: the run builds the reference for it.
      ['trpa-ok', ['algorithm.advantage=trpa', 'algorithm.loss=trpa', 'algorithm.klCoefficient=0']],
      ['dno-ok', ['algorithm.advantage=dno', 'algorithm.loss=dno', 'algorithm.lossOptions={"eta":1}']],
      // The addition task's format reward as the thinking reward (the paper's is a judge).
      ['trust-ok', ['algorithm.advantage=trust-grpo', 'algorithm.advantageOptions={"thinkingReward":"format"}']],
      // PROF filters on the task's 1/0 check with the format reward standing in for the PRM.
      [
        'prof-ok',
        ['algorithm.advantage=prof', 'algorithm.advantageOptions={"processReward":"format","removePerGroup":1}'],
      ],
      // Zoom-Zero's scores from the addition task's two rewards; marker id 5 (one character) splits the completions.
      [
        'zoom-ok',
        [
          'algorithm.advantage=zoom-zero',
          'algorithm.advantageOptions={"markerIds":[5],"formatReward":"format","iouReward":"correct","answerReward":"correct","zoomReward":null}',
        ],
      ],
    ] as [string, string[]][]) {
      expect(await runTrainCommand({ set: [...tiny, ...extra], runName, quiet: true })).toBe(0);
    }
    const attempt = runTrainCommand({
      set: [
        ...tiny,
        'algorithm.advantage=stratified',
        'algorithm.advantageOptions={"alpha":0.5,"strataFrom":"row.missing"}',
      ],
      runName: 'strata-missing',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(
      /algorithm\.advantageOptions\.strataFrom: the stratified estimator reads column "missing", which training row 0 does not have \(columns: prompt, answer, a, b\)/,
    );
  });
});

describe('grpo train --set task=NAME for every built-in task', () => {
  const dataDirectory = sharedData;
  const checkpoint = tinyStoriesModel;
  const onTinyStories = [
    'sft.steps=0',
    'grpo.steps=1',
    'grpo.promptsPerStep=2',
    // maxRows 3 below: a draw of 3 is every row, shuffled as the first 3 of the default 4096 draws
    // (dataset-task.ts draw), so the step and the position check see the same prompts without
    // rendering and tokenizing 4093 repeats (~3 s a run).
    'grpo.examples=3',
    'sampling.groupSize=4',
    'grpo.microBatchSize=8',
    'sampling.maxNewTokens=4',
    'evaluation.examples=2',
    'checkpoint.every=0',
    `logging.runsDirectory=${JSON.stringify(scratch)}`,
    `model.checkpoint=${JSON.stringify(checkpoint)}`,
  ];
  it.each(taskRegistry.names().filter((name) => name !== 'dataset' && !taskRegistry.isGenerated(name)))(
    'task %s runs one GRPO step on the real data',
    async (task) => {
      // The first rows only (maxRows), so every prompt fits the fixture's 512 positions.
      const set = [
        ...onTinyStories,
        `task=${task}`,
        `taskOptions={"dataDirectory":${JSON.stringify(dataDirectory)},"maxRows":3}`,
      ];
      expect(await runTrainCommand({ set, runName: `task-${task}`, quiet: true })).toBe(0);
      const [first] = readFileSync(join(scratch, `task-${task}`, 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(first.completions).toHaveLength(4);
    },
  );
  it('a task whose data folder is missing names taskOptions.dataDirectory before any model is loaded', async () => {
    const attempt = runTrainCommand({
      set: [...onTinyStories, 'task=gsm8k', 'model.checkpoint="/nonexistent/checkpoint"'],
      runName: 'no-data',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(
      /^taskOptions\.dataDirectory: task "gsm8k" reads gsm8k\/test\.jsonl from data/,
    );
  });
});
