/**
 * Tests of the interpreter tool on the real sandbox: output, tracebacks as observations, a hanging
 * program as a thrown error (the rollout's tool error), output cut, arguments checked.
 */
import { describe, expect, it } from 'vitest';
import { interpreterTool } from './interpreter.js';

const signal = new AbortController().signal;

describe('interpreterTool', () => {
  it('python: prints come back; a raise is an observation with its traceback and exit code', async () => {
    const tool = interpreterTool({ language: 'python' });
    expect(tool.name).toBe('python');
    expect(await tool.run({ code: 'print(6 * 7)' }, { signal })).toBe('42');
    const failed = (await tool.run({ code: 'raise ValueError("bad")' }, { signal })) as string;
    expect(failed).toMatch(/ValueError: bad/);
    expect(failed).toMatch(/\[exit code 1\]/);
  }, 30_000);
  it('javascript: console.log output; no output says so', async () => {
    const tool = interpreterTool({ language: 'javascript' });
    expect(await tool.run({ code: 'console.log([1, 2, 3].map((x) => x * x).join(","))' }, { signal })).toBe('1,4,9');
    expect(await tool.run({ code: 'const x = 1;' }, { signal })).toBe('[no output]');
  }, 30_000);
  it('a program past its limit throws (a tool error, the episode goes on)', async () => {
    const tool = interpreterTool({ language: 'python', timeoutMs: 500 });
    await expect(tool.run({ code: 'while True: pass' }, { signal })).rejects.toThrow(/500 ms limit/);
  }, 30_000);
  it('cuts long observations and checks arguments', async () => {
    const tool = interpreterTool({ language: 'python', maxObservationCharacters: 10 });
    expect(await tool.run({ code: 'print("x" * 50)' }, { signal })).toBe('xxxxxxxxxx\n[… 40 more characters cut]');
    await expect(tool.run({ program: 'print(1)' }, { signal })).rejects.toThrow(/code/);
  }, 30_000);
});
