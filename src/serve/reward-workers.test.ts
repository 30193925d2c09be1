/**
 * The reward worker pool behind `grpo serve-rewards` (issue 36): a reward that never returns (a
 * synchronous loop) or that exhausts its worker's heap is a failed reward in the response (`timeout`
 * or `error`, null in OpenRLHF's rewards), never a hang; another client's request is answered while
 * the stuck one is still running; and the pool goes on serving with a replacement worker.
 * Behaviour only, no wall-clock assertions (bench/serve-hostile.ts measures latency).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRewardServer, type RunningRewardServer } from './reward-server.js';
import { RewardWorkerPool } from '../rewards/workers.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-reward-workers-'));
const source = join(directory, 'rewards.mjs');
// Plain JavaScript, as a recipe's rewards would be once built: functions cannot cross threads, so
// each worker imports this module and calls `rewards(args)`.
writeFileSync(
  source,
  `export function rewards({ weight }) {
  return [
    {
      name: 'check',
      weight,
      reward: ({ completion, row }) => {
        if (completion === 'hang') for (;;) {}
        if (completion === 'hog') for (const kept = []; ; ) kept.push(new Array(1e6).fill(completion));
        return completion === row.answer ? 1 : 0;
      },
      columns: [{ column: 'answer' }],
    },
    { name: 'length', weight: 0, reward: ({ completion }) => completion.length },
  ];
}
`,
);

let pool: RewardWorkerPool;
let server: RunningRewardServer;
beforeAll(async () => {
  pool = await RewardWorkerPool.start({
    source: { module: pathToFileURL(source).href, exportName: 'rewards', args: { weight: 2 } },
    threads: 2,
    timeoutMs: 2000,
    memoryMb: 64,
  });
  server = await startRewardServer({ workers: pool, port: 0 });
}, 120_000);
afterAll(async () => {
  await server.close();
  await pool.close();
  rmSync(directory, { recursive: true, force: true });
});

async function post(body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${server.url}/get_reward`, { method: 'POST', body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: JSON.parse(text.replaceAll('NaN', 'null')) };
}

describe('rewards in stoppable workers', () => {
  it('the workers built the rewards from the source: names and weights', () => {
    expect(pool.names).toEqual(['check', 'length']);
    expect(pool.weights).toEqual([2, 0]);
    expect(pool.columns).toEqual([[{ column: 'answer' }], []]);
  });

  it('a request row without a column a reward declares is a 400 naming the reward, the column and the row', async () => {
    const { status, json } = await post({ query: ['4', '5'], labels: ['4', '{"reference": "5"}'] });
    expect(status).toBe(400);
    expect(json.error).toBe(
      'rewards[0]: "check" reads column "answer", which request row 1 does not have (columns: reference)',
    );
  });

  it('a reward that never returns is a timeout (null reward), and another client is answered meanwhile', async () => {
    let stuckDone = false;
    const stuck = post({ query: ['hang', '4'], labels: ['x', '4'] }).then((reply) => ((stuckDone = true), reply));
    const other = await post({ prompt: 'p', response: '7', label: '7' });
    expect([other.status, other.json]).toEqual([200, 2]);
    expect(stuckDone).toBe(false); // answered while the stuck call was still running
    const { status, json } = await stuck;
    expect(status).toBe(200);
    expect(json.rewards).toEqual([null, 2]);
    expect(json.errors).toEqual([
      { row: 0, reward: 'check', status: 'timeout', message: 'timed out after 2000 ms (stopped)' },
    ]);
    expect(json.extra_logs['reward/length']).toEqual([4, 1]); // the other reward of that row still scored
  }, 60_000);

  it('a reward that exhausts its heap is an error; the pool goes on with a new worker', async () => {
    const { status, json } = await post({ query: ['hog'], labels: ['x'] });
    expect(status).toBe(200);
    expect(json.rewards).toEqual([null]);
    expect(json.errors[0]).toMatchObject({ row: 0, reward: 'check', status: 'error' });
    expect(json.errors[0].message).toMatch(/worker/);
    const after = await post({ prompt: 'p', response: '7', label: '7' });
    expect([after.status, after.json]).toEqual([200, 2]);
  }, 60_000);

  it('a source that cannot build its rewards fails the start, naming why', async () => {
    await expect(
      RewardWorkerPool.start({
        source: { module: pathToFileURL(source).href, exportName: 'nope', args: {} },
        threads: 1,
      }),
    ).rejects.toThrow('has no function export "nope"');
  }, 60_000);
});
