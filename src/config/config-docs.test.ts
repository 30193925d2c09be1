/** docs/configuration.md is generated from the schema; this fails when someone forgets to regenerate it. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFields, configReferenceMarkdown } from './config-docs.js';

describe('config reference', () => {
  it('every field has a description', () => {
    const missing = configFields()
      .filter((field) => !field.description)
      .map((field) => field.path);
    expect(missing).toEqual([]);
  });
  it('docs/configuration.md is current (run `npm run docs:config`)', () => {
    const written = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(written).toBe(configReferenceMarkdown());
  });
});
