/** Writes docs/configuration.md from the config schema (`npm run docs:config`). */
import { writeFileSync } from 'node:fs';
import { configReferenceMarkdown } from '../src/config/config-docs.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), configReferenceMarkdown());
console.log('wrote docs/configuration.md');
