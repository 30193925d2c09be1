/**
 * checkpointRegistries, which the test setup uses between test files that share a process: entries
 * added after the checkpoint are gone after restoring, removed ones are back, and the entries keep
 * their order, in every registry created before the checkpoint.
 */
import { describe, expect, it } from 'vitest';
import { checkpointRegistries, createNamedRegistry } from './registry.js';

describe('checkpointRegistries', () => {
  it('puts every registry back as it was at the checkpoint', () => {
    const colours = createNamedRegistry<{ name: string }>('colour');
    const shapes = createNamedRegistry<{ name: string }>('shape');
    colours.add({ name: 'red' });
    colours.add({ name: 'blue' });
    const restore = checkpointRegistries();
    colours.add({ name: 'green' });
    shapes.add({ name: 'square' });
    expect(colours.names()).toEqual(['red', 'blue', 'green']);
    restore();
    expect(colours.names()).toEqual(['red', 'blue']);
    expect(shapes.names()).toEqual([]);
    expect(colours.has('green')).toBe(false);
    // A name freed by the restore can be taken by a different entry again.
    colours.add({ name: 'green' });
    expect(colours.names()).toEqual(['red', 'blue', 'green']);
  });
});
