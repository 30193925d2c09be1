/**
 * Code-execution reward: run a Python or JavaScript completion against test cases
 * (HumanEval / MBPP style) in the sandbox of `code/sandbox.ts`; partial credit is the fraction
 * of tests passed.
 *
 * Failure policy: the program's own failures (syntax error, wrong answer, crash, timeout, memory
 * exhaustion, `exit()` before the tests) score what passed so far. A sandbox that cannot start or
 * a harness that never reports "ready" throws, so the runner marks the sample invalid rather than 0.
 */
import {
  JAVASCRIPT_GRADER,
  JAVASCRIPT_SOLUTION_SERVER,
  PYTHON_GRADER,
  PYTHON_SOLUTION_SERVER,
} from './code/harness.js';
import { newNonce, runSandboxed, type SandboxLanguage, type SandboxResult } from './code/sandbox.js';
import type { RewardFn } from './types.js';

export { runSandboxed, sandboxCapabilities, type SandboxOptions, type SandboxResult } from './code/sandbox.js';

/** The code in a completion: the last fenced block in the language (or any fenced block), else the whole text. */
export function extractCode(completion: string, language: SandboxLanguage): string {
  const names = language === 'python' ? 'python|py|python3' : 'javascript|js|node';
  const tagged = [...completion.matchAll(new RegExp('```(?:' + names + ')[ \\t]*\\n([\\s\\S]*?)```', 'gi'))];
  if (tagged.length) return tagged[tagged.length - 1]![1]!;
  const any = [...completion.matchAll(/```[\w-]*[ \t]*\n([\s\S]*?)```/g)];
  return any.length ? any[any.length - 1]![1]! : completion;
}

/** Outcome of running tests against a solution. */
export interface TestRun {
  passed: number;
  total: number;
  /** Per test: true when it passed. */
  results: boolean[];
  loadError: string | null;
  sandbox: SandboxResult;
}

/** Limits for {@link runTests}. */
export interface RunTestsOptions {
  language: SandboxLanguage;
  /** Code run after the solution and before the tests (MBPP `test_setup_code`). */
  setup?: string;
  timeoutMs?: number;
  memoryMb?: number;
  signal?: AbortSignal;
}

/** Runs `tests` (each a code snippet that raises/throws on failure) against `solution` in the sandbox. */
export async function runTests(solution: string, tests: readonly string[], options: RunTestsOptions): Promise<TestRun> {
  const nonce = newNonce();
  const python = options.language === 'python';
  // the solution runs in one process, the tests in another it cannot reach (see code/harness.ts)
  const sandbox = await runSandboxed(python ? PYTHON_SOLUTION_SERVER : JAVASCRIPT_SOLUTION_SERVER, {
    language: options.language,
    timeoutMs: options.timeoutMs,
    memoryMb: options.memoryMb,
    signal: options.signal,
    grader: {
      code: python ? PYTHON_GRADER : JAVASCRIPT_GRADER,
      input: `${nonce}\n${JSON.stringify({ setup: options.setup ?? '', tests })}`,
    },
    files: { [`solution.${python ? 'py' : 'js'}`]: solution },
  });
  const lines = sandbox.graderOutput
    .split('\n')
    .filter((line) => line.startsWith(`${nonce} `))
    .map((line) => line.slice(nonce.length + 1).split(' '));
  if (!lines.some(([kind]) => kind === 'ready')) {
    if (options.signal?.aborted) throw new Error('code run aborted');
    throw new Error(
      `code sandbox did not start the harness (exit ${sandbox.exitCode}${sandbox.timedOut ? ', timed out' : ''}): ${sandbox.stderr.slice(0, 300)}`,
    );
  }
  const results = tests.map(() => false);
  for (const [kind, index] of lines) if (kind === 'pass') results[Number(index)] = true;
  const loadError = lines.find(([kind]) => kind === 'load-error')?.[1] ?? null;
  return { passed: results.filter(Boolean).length, total: tests.length, results, loadError, sandbox };
}

/** Reads the test list of a row: an array of snippets, or one snippet (a whole HumanEval `check`). */
function testsOf(row: Readonly<Record<string, unknown>>, column: string): string[] {
  const value = row[column];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value as string[];
  throw new Error(`codeTests: column "${column}" must be a string or an array of strings`);
}

/** Options of {@link codeTests}. */
export interface CodeTestsOptions {
  language?: SandboxLanguage;
  /** Column with the tests (default `tests`): an array of snippets, or one snippet. */
  testsColumn?: string;
  /** Optional column with setup code run before the tests. */
  setupColumn?: string;
  /** Optional column prepended to the completion's code (HumanEval: the prompt with the signature). */
  prefixColumn?: string;
  /** Wall-clock limit per completion (default 5000 ms). */
  timeoutMs?: number;
  memoryMb?: number;
}

/**
 * Fraction of the row's tests the completion's code passes, run in the sandbox.
 * @example
 * const reward = codeTests({ language: 'python' });
 * await reward(makeRewardInput({ completion: '```python\ndef add(a, b): return a + b\n```', row: { tests: ['assert add(1, 2) == 3'] } })); // 1
 */
export function codeTests({
  language = 'python',
  testsColumn = 'tests',
  setupColumn,
  prefixColumn,
  timeoutMs,
  memoryMb,
}: CodeTestsOptions = {}): RewardFn {
  return async ({ completion, row, signal }) => {
    const tests = testsOf(row, testsColumn);
    if (tests.length === 0) return null; // nothing to check: not applicable
    const prefix = prefixColumn ? String(row[prefixColumn] ?? '') : '';
    const setup = setupColumn ? String(row[setupColumn] ?? '') : '';
    const run = await runTests(prefix + extractCode(completion, language), tests, {
      language,
      setup,
      timeoutMs,
      memoryMb,
      signal,
    });
    return run.passed / run.total;
  };
}

/** A HumanEval row as {@link codeTests} columns: prefix = prompt, one test = the `check` function called on the entry point. */
export function humanEvalRow(row: { prompt: string; test: string; entry_point: string }): {
  prompt: string;
  tests: string[];
} {
  return { prompt: row.prompt, tests: [`${row.test}\ncheck(${row.entry_point})\n`] };
}

/** An MBPP row as {@link codeTests} columns: one test per assert, the setup code kept. */
export function mbppRow(row: { test_list: string[]; test_setup_code?: string }): { tests: string[]; setup: string } {
  return { tests: [...row.test_list], setup: row.test_setup_code ?? '' };
}
