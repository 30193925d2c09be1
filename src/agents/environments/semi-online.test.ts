/**
 * UI-S1's semi-online environment (#96): the authors' step score (0.1·format + 0.9·action, action
 * 1 / 0.5 / 0.1 / 0), the expert's next screen whatever the model did, a miss patched at most
 * `patchThreshold` times before the next one ends the episode (−1: always), and the episode reward
 * Σ step_reward = matched steps / steps. Bad rows and options are refused naming the column.
 */
import { describe, expect, it } from 'vitest';
import { guiStepScore, semiOnlineEnvironment, type ExpertStep, type SemiOnlineEpisode } from './semi-online.js';

const steps: ExpertStep[] = [
  { screen: 'screen: 1 mail 2 settings', action: 'click(2)' },
  { screen: 'screen: 1 wifi 2 sound', action: 'click(1)' },
  { screen: 'screen: field to write', action: 'type(hi)' },
];
const turn = (action: string, thought = 'x') => `<think>${thought}</think><action>${action}</action>`;

describe('guiStepScore', () => {
  it.each([
    [turn('click(2)'), 1, 'exact, with a thought: 0.1 + 0.9'],
    [turn('click(2)', ' '), 0.9, 'exact, empty thought'],
    [turn('click(1)'), 0.1 + 0.45, 'right type, other element'],
    [turn('type(2)'), 0.1 + 0.09, 'parsed, wrong type'],
    ['<think>x</think>click(2)', 0.1, 'no <action> tag: nothing parsed'],
    [`${turn('type(hi)')}${turn('click( 2 )')}`, 1, 'the last action counts, arguments trimmed'],
  ])('%s → %s (%s)', (text, score) => {
    expect(guiStepScore(text, 'click(2)').score).toBeCloseTo(score, 12);
  });
});

describe('semiOnlineEnvironment', () => {
  const make = (patchThreshold: number) =>
    semiOnlineEnvironment({ patchThreshold })({ steps }, { seed: 0, episodeIndex: 0 }) as SemiOnlineEpisode;

  it('follows the expert: a miss is patched, the next screen is the expert’s, the reward counts exact steps', async () => {
    const episode = make(2);
    expect(episode.respond(turn('click(1)'))).toEqual({
      observation: 'patched: click(2)\nscreen: 1 wifi 2 sound',
      reward: 0.55,
      done: false,
    });
    expect(episode.respond(turn('click(1)'))).toEqual({
      observation: 'screen: field to write',
      reward: 1,
      done: false,
    });
    expect(episode.done()).toBe(false);
    expect(episode.respond(turn('type(hi)'))).toEqual({ reward: 1, done: true });
    expect(episode.done()).toBe(true);
    expect(episode.reward()).toBeCloseTo(2 / 3, 12);
  });

  it('ends the episode at the first miss past the patch threshold; −1 patches every miss', async () => {
    const strict = make(0);
    expect(strict.respond(turn('click(1)'))).toEqual({ reward: 0.55, done: true });
    expect(strict.reward()).toBe(0);
    const once = make(1);
    expect(once.respond(turn('click(1)')).done).toBe(false);
    expect(once.respond(turn('click(2)')).done).toBe(true); // second miss, one patch allowed
    const always = make(-1);
    for (const _ of steps) always.respond(turn('type(no)'));
    expect(always.done()).toBe(true);
  });

  it('refuses a malformed trajectory or option, naming it', () => {
    expect(() =>
      semiOnlineEnvironment()({ steps: [{ screen: 's', action: 'click' }] }, { seed: 0, episodeIndex: 0 }),
    ).toThrow(/row column "steps"/);
    expect(() => semiOnlineEnvironment({ stepsColumn: 'trajectory' })({}, { seed: 0, episodeIndex: 0 })).toThrow(
      /row column "trajectory"/,
    );
    expect(() => semiOnlineEnvironment({ patchThreshold: -2 })).toThrow(/patchThreshold/);
  });
});
