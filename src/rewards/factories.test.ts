/** Tests of the reward-factory registry: every built-in builds from JSON options; errors name what is wrong. */
import { describe, expect, it } from 'vitest';
import { createReward, rewardFactories } from './factories.js';
import { createRewardFactoryRegistry, UnknownRewardError } from './factory-registry.js';
import { isBatchReward, isGroupReward, makeRewardInput } from './types.js';

/** Minimal options for the factories that require some. */
const required: Record<string, unknown> = {
  regex: { pattern: 'x' },
  'required-sections': { sections: ['a'] },
  'length-budget': { budget: 10 },
  'score-distribution': { maxScore: 2 },
  'llm-judge': { baseUrl: 'http://127.0.0.1:9/v1', model: 'm' },
  'domain-router': { routes: { math: { name: 'math-answer' } } },
  'outcome-gated-process': { process: { name: 'think-format' } },
  smartsearch: { gamma: 0.1, phiMin: 0.5, phiMax: 0.3 },
};

describe('rewardFactories', () => {
  it.each(rewardFactories.names())('%s builds from JSON options and has a description and citation', (name) => {
    const factory = rewardFactories.get(name);
    expect(factory.description.length).toBeGreaterThan(10);
    expect(factory.citation.length).toBeGreaterThan(3);
    const reward = factory.create(required[name] ?? {});
    expect(typeof reward === 'function' || isGroupReward(reward) || isBatchReward(reward)).toBe(true);
  });

  it('a built reward scores', async () => {
    const reward = createReward('math-answer', { answerColumn: 'gold' });
    expect(
      typeof reward === 'function' && (await reward(makeRewardInput({ completion: '\\boxed{3}', row: { gold: '3' } }))),
    ).toBe(1);
  });

  it('an unknown name lists the known ones', () => {
    expect(() => createReward('mathAnswer')).toThrow(UnknownRewardError);
    expect(() => createReward('mathAnswer')).toThrow(/Known rewards: math-answer, think-format, tag-format/);
  });

  it('bad options name the reward and the field', () => {
    expect(() => createReward('soft-overlong', { maxLength: 'long' })).toThrow(
      /reward "soft-overlong": bad options: maxLength:/,
    );
    expect(() => createReward('think-format', { strict: true })).toThrow(
      /reward "think-format": bad options: .*strict/,
    );
    expect(() => createReward('regex', {})).toThrow(/reward "regex": bad options: pattern:/);
  });

  it('refuses a second factory under a taken name and non-kebab names', () => {
    const registry = createRewardFactoryRegistry();
    const factory = rewardFactories.get('json-valid');
    registry.register(factory);
    registry.register(factory); // the same factory again is fine
    expect(() => registry.register({ ...factory })).toThrow(/already registered/);
    expect(() => registry.register({ ...factory, name: 'JsonValid' })).toThrow(/kebab-case/);
  });
});
