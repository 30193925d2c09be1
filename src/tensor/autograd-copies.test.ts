/**
 * The no-grad switch is one per process: `grpo train` loads a recipe through tsx, which gives the
 * recipe its own copy of the library, and a rollout built from that copy must stop the trainer's
 * model from recording graphs (and the other way round).
 */
import { describe, expect, it } from 'vitest';
import { isGradEnabled, noGrad } from './autograd.js';

describe('noGrad across copies of the library', () => {
  it('a copy loaded as a recipe turns recording off for this copy too, and back', async () => {
    const { tsImport } = await import('tsx/esm/api');
    const copy = (await tsImport(new URL('./autograd.ts', import.meta.url).href, {
      parentURL: import.meta.url,
    })) as typeof import('./autograd.js');
    expect(copy.noGrad, 'tsx gave a separate copy').not.toBe(noGrad);
    expect(copy.noGrad(() => isGradEnabled())).toBe(false);
    expect(noGrad(() => copy.isGradEnabled())).toBe(false);
    expect([isGradEnabled(), copy.isGradEnabled()]).toEqual([true, true]);
  });
});
