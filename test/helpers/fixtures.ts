/**
 * Where the tests' fixtures live, spelled once: the repository's own `test/fixtures`, and the
 * larger files shared by every checkout in `../shared` (the TinyStories model, the real data sets).
 *
 * Is not: shipped (tests only), or a loader — each test reads what it needs from these paths.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this checkout), ending in a slash. */
export const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** `../shared` beside the checkout: fixtures too large for the repository, shared by every checkout. */
export const sharedDirectory = join(repositoryRoot, '../shared');

/** The real data sets (gsm8k, math500, mbpp, humaneval, countdown, game24, …), a task's `dataDirectory`. */
export const sharedData = join(sharedDirectory, 'data');

/** A file or folder under the shared data sets. */
export const sharedDataFile = (...parts: string[]): string => join(sharedData, ...parts);

/** The TinyStories-656K checkpoint folder (a real pretrained model with its BPE tokenizer, 512 positions). */
export const tinyStoriesModel = join(sharedDirectory, 'fixtures/models/tinystories-656k');

/** The repository's own fixtures folder. */
export const testFixtures = join(repositoryRoot, 'test/fixtures');

/** A file or folder under `test/fixtures` (models, datasets, chat templates, reference JSON, …). */
export const testFixture = (...parts: string[]): string => join(testFixtures, ...parts);

/** The LoRA adapter fixture trained on TinyStories, with its PyTorch reference. */
export const tinyStoriesAdapter = testFixture('lora-tinystories');
