/*
 * Unit tests of the run-folder reader's guards: JSONL parsing that tolerates a run being
 * written (half a last line) but names bad lines, path resolution that refuses escapes, reads
 * that refuse anything but a regular file; and of the status it reports (a `running` run whose
 * process is gone is `interrupted`). The HTTP layer over them is tested in server.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NotFoundError,
  RefusedPathError,
  RunFolderReader,
  inferStatus,
  parseJsonLines,
  resolveInside,
} from './run-files.js';

describe('parseJsonLines', () => {
  it.each([
    // [text, steps parsed, nextLine, partialLastLine, problem count]
    ['', [], 1, false, 0], // an empty file: ask for line 1 again
    ['{"step":1}\n{"step":2}\n', [1, 2], 3, false, 0], // complete lines
    ['{"step":1}\n{"step":2', [1], 2, true, 0], // the writer is mid-line: line 2 is re-read later
    ['{"step":1}\n{"step":2}', [1, 2], 3, false, 0], // last line complete but newline not yet written
    ['{"step":1}\n\n{"step":3}\n', [1, 3], 4, false, 0], // blank lines are skipped, numbering kept
    ['{"step":1}\n{"step":\n{"step":3}\n', [1, 3], 4, false, 1], // a broken middle line is a problem
    ['[1,2]\n{"step":2}\n', [2], 3, false, 1], // not an object
  ] as const)('%j', (text, steps, nextLine, partialLastLine, problemCount) => {
    const parsed = parseJsonLines(text, 'metrics.jsonl');
    expect(parsed.rows.map((row) => row.value.step)).toEqual(steps);
    expect(parsed.nextLine).toBe(nextLine);
    expect(parsed.partialLastLine).toBe(partialLastLine);
    expect(parsed.problems).toHaveLength(problemCount);
  });

  it('names the file and line of a broken line', () => {
    const parsed = parseJsonLines('{"step":1}\n{oops}\n', 'samples.jsonl');
    expect(parsed.problems[0]).toMatch(/^samples\.jsonl line 2: not valid JSON/);
    expect(parsed.rows[0].line).toBe(1);
  });
});

describe('resolveInside', () => {
  let scratch: string;
  let root: string;

  beforeAll(async () => {
    scratch = await realpath(await mkdtemp(join(tmpdir(), 'grpo-resolve-')));
    root = join(scratch, 'runs');
    await mkdir(join(root, 'run-a'), { recursive: true });
    await writeFile(join(root, 'run-a', 'config.json'), '{}');
    await writeFile(join(scratch, 'outside.json'), '{}');
    await symlink(join(scratch, 'outside.json'), join(root, 'run-a', 'summary.json'));
    await symlink(join(root, 'run-a'), join(root, 'alias'));
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('returns the real path of files inside, also through links that stay inside', async () => {
    expect(await resolveInside(root, ['run-a', 'config.json'])).toBe(join(root, 'run-a', 'config.json'));
    expect(await resolveInside(root, ['alias', 'config.json'])).toBe(join(root, 'run-a', 'config.json'));
  });

  it.each([['..'], ['.'], [''], ['run-a', '..', '..'], ['a/b'], ['..\\x'], ['.hidden'], ['x\0y']])(
    'refuses the segments %j',
    async (...names) => {
      await expect(resolveInside(root, names)).rejects.toBeInstanceOf(RefusedPathError);
    },
  );

  it('refuses a link to a file outside and reports missing files as not found', async () => {
    await expect(resolveInside(root, ['run-a', 'summary.json'])).rejects.toBeInstanceOf(RefusedPathError);
    await expect(resolveInside(root, ['run-a', 'metrics.jsonl'])).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('RunFolderReader on files that are not regular files', () => {
  let root: string;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), 'grpo-fifo-')));
    await mkdir(join(root, 'run-a'));
    await writeFile(join(root, 'run-a', 'config.json'), '{}');
    // A named pipe with no writer: a plain read would wait for one forever and hold a libuv
    // thread, and four such reads stall every file read of the dashboard.
    execFileSync('mkfifo', [join(root, 'run-a', 'metrics.jsonl'), join(root, 'run-a', 'summary.json')]);
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('refuses a FIFO metrics.jsonl or summary.json at once, naming it, and still lists the run', async () => {
    const reader = new RunFolderReader(root);
    await expect(reader.readMetrics('run-a')).rejects.toThrow(/^run-a\/metrics\.jsonl is not a regular file/);
    await expect(reader.readJson('run-a', 'summary.json')).rejects.toBeInstanceOf(RefusedPathError);
    expect((await reader.listRuns()).map((run) => run.id)).toEqual(['run-a']);
  }, 5000);
});

describe('inferStatus', () => {
  // A process that has exited and been reaped: its pid names no live process (pids are not reused this soon).
  const deadPid = spawnSync(process.execPath, ['-e', '']).pid!;
  const now = Date.parse('2026-06-01T12:00:00Z');
  const fresh = now - 10_000;
  const stale = now - 10 * 60_000;
  const here = hostname();
  it.each([
    // [summary, metrics modified, status]
    [{ status: 'finished', pid: deadPid, hostname: here }, stale, 'finished'], // a written end status stands
    [{ status: 'failed', reason: 'boom' }, fresh, 'failed'],
    [{ status: 'running', pid: process.pid, hostname: here }, stale, 'running'], // alive: a slow step is not a death
    [{ status: 'running', pid: deadPid, hostname: here }, fresh, 'interrupted'], // gone, however recent its metrics
    [{ status: 'running', pid: deadPid, hostname: `not-${here}` }, fresh, 'running'], // another host: cannot check the pid
    [{ status: 'running', pid: deadPid, hostname: `not-${here}` }, stale, 'interrupted'], // ... so stale metrics decide
    [{ status: 'running' }, stale, 'interrupted'], // a trainer that recorded no pid: stale metrics decide
    [{ status: 'running' }, null, 'running'], // no metrics yet
    [null, null, 'starting'],
    [null, fresh, 'running'],
    [null, stale, 'interrupted'],
  ] as const)('%j, metrics modified %s → %s', (summary, modified, status) => {
    expect(inferStatus(summary as Record<string, unknown> | null, modified, now)).toBe(status);
  });

  it('the runs list reports a dead trainer as interrupted and carries the reason of a failed run', async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'grpo-status-')));
    try {
      const write = async (id: string, summary: Record<string, unknown>) => {
        await mkdir(join(root, id));
        await writeFile(join(root, id, 'metrics.jsonl'), '{"step":1,"phase":"grpo"}\n');
        await writeFile(join(root, id, 'summary.json'), JSON.stringify(summary));
      };
      await write('killed', { status: 'running', pid: deadPid, hostname: here });
      await write('crashed', {
        status: 'failed',
        reason: 'stopping: 3 consecutive steps had a non-finite loss',
        pid: deadPid,
        hostname: here,
      });
      const runs = await new RunFolderReader(root).listRuns();
      expect(runs.map(({ id, status, reason }) => ({ id, status, reason }))).toEqual([
        { id: 'killed', status: 'interrupted', reason: null },
        { id: 'crashed', status: 'failed', reason: 'stopping: 3 consecutive steps had a non-finite loss' },
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
