/** Tests of the `grpo list` catalog: each built-in reward's line shows the row columns it reads (issue 39). */
import { describe, expect, it } from 'vitest';
import { runCatalogCommand } from './catalog-command.js';

describe('grpo list (catalog)', () => {
  const lineOf = (name: string) =>
    runCatalogCommand()
      .split('\n')
      .find((line) => line.startsWith(`  ${name} `))!;

  it('shows the columns a reward reads with its default options, and none for one that reads none', () => {
    expect(lineOf('char-f1')).toContain('; reads reference [');
    expect(lineOf('equation')).toContain('; reads numbers, target [');
    expect(lineOf('think-format')).not.toContain('reads');
  });
});
