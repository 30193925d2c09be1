import { configDefaults, defineConfig } from 'vitest/config';

// Two projects, both run in reused worker processes (`isolate: false` at the root: vitest 3 takes
// the forks pool's process reuse from the root config only). `shared` (most files) also shares
// each worker's module graph across test files: a file no longer pays for importing the library
// again, which was about a third of the suite's CPU time. test/helpers/per-file-state.ts puts back
// the library's process-wide state a file may change (tensor backend, registries, backends it made)
// and per-file-environment.ts the process's (env, exit code), so results do not depend on which
// files share a worker (checked with --sequence.shuffle.files). `isolated` gets a fresh module graph
// per file (vitest resets the module cache and mocks before each): module mocks with
// vi.resetModules (garbage.test.ts), the CLI's in-process runs (they spy on stdout and load
// recipes), the browser end-to-end test and the package install test. Vitest runs the projects one
// after the other, each in fresh workers.
const isolatedFiles = [
  'src/cli/**/*.test.ts',
  'src/tensor/garbage.test.ts',
  'src/web/**/*.test.ts',
  'test/**/*.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    isolate: false,
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['src/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...isolatedFiles],
          isolate: false,
          setupFiles: ['test/helpers/per-file-environment.ts', 'test/helpers/per-file-state.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: isolatedFiles,
          isolate: true,
          setupFiles: ['test/helpers/per-file-environment.ts'],
        },
      },
    ],
  },
});
