/*
 * Tests of the dashboard's HTTP server over a temporary copy of test/fixtures/runs: the JSON API
 * (runs list, metrics with a half-written last line, samples by step, config, summary), the
 * read-only rule, and refusal of every way out of the runs folder (.., %2e%2e, encoded slashes,
 * absolute paths, symlinks). Raw requests go through node:http because fetch() would normalise
 * dot segments before they reach the server.
 * Not tested here: the page itself (dashboard.e2e.test.ts drives it in Chromium).
 */
import { request } from 'node:http';
import { appendFile, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDashboardCommand, startDashboard, type DashboardHandle } from './server.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const fixtureRuns = testFixture('runs');
const finishedId = '20260101-120000-arithmetic';
const liveId = '20260102-090000-arithmetic-live';
const secret = 'SECRET-OUTSIDE-THE-RUNS-FOLDER';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

let scratch: string;
let runsDirectory: string;
let dashboard: DashboardHandle;
let port: number;

/** Send `path` byte for byte (no normalisation) with `method` and optional Host header. */
function rawRequest(path: string, method = 'GET', host?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers = host === undefined ? {} : { host };
    const outgoing = request({ host: '127.0.0.1', port, path, method, headers }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () =>
        resolve({
          status: incoming.statusCode ?? 0,
          headers: incoming.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** GET `path` as bytes, with the status and content type. */
function rawBytes(path: string): Promise<{ status: number; type: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port, path }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () =>
        resolve({
          status: incoming.statusCode ?? 0,
          type: incoming.headers['content-type'],
          body: Buffer.concat(chunks),
        }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

async function getJson(path: string): Promise<{ status: number; json: any }> {
  const response = await rawRequest(path);
  return { status: response.status, json: JSON.parse(response.body) };
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'grpo-dashboard-'));
  runsDirectory = join(scratch, 'runs');
  await cp(fixtureRuns, runsDirectory, { recursive: true });
  // Things outside the runs folder that no request may reach.
  await mkdir(join(scratch, 'outside-run'));
  await writeFile(join(scratch, 'outside-run', 'config.json'), JSON.stringify({ secret }));
  await writeFile(join(scratch, 'outside-run', 'metrics.jsonl'), JSON.stringify({ step: 1, secret }) + '\n');
  await writeFile(join(scratch, 'secret.json'), JSON.stringify({ secret }));
  await symlink(join(scratch, 'outside-run'), join(runsDirectory, 'escape-link'));
  await mkdir(join(runsDirectory, 'linked-files'));
  await symlink(join(scratch, 'secret.json'), join(runsDirectory, 'linked-files', 'config.json'));
  await symlink(join(scratch, 'outside-run', 'metrics.jsonl'), join(runsDirectory, 'linked-files', 'metrics.jsonl'));
  // A run with a corrupt line in the middle and a line without a step.
  await mkdir(join(runsDirectory, 'broken'));
  await writeFile(
    join(runsDirectory, 'broken', 'metrics.jsonl'),
    '{"step":1,"reward/mean":0.5}\n{"step":2,\n{"reward/mean":1}\n{"step":3}\n',
  );
  dashboard = await startDashboard({ runsDirectory, port: 0 });
  port = Number(new URL(dashboard.url).port);
});

afterAll(async () => {
  await dashboard?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('dashboard API', () => {
  it('listens on 127.0.0.1 by default', () => {
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('lists runs newest first with status, last step and key metrics, skipping files and outside links', async () => {
    const { status, json } = await getJson('/api/runs');
    expect(status).toBe(200);
    const ids = json.runs.map((run: { id: string }) => run.id);
    // Sorted by id, descending (timestamped ids: newest first). make-fixture-runs.mjs is a file,
    // escape-link points outside, linked-files only has links to outside files.
    expect(ids).toEqual(['broken', liveId, finishedId]);
    const finished = json.runs.find((run: { id: string }) => run.id === finishedId);
    expect(finished).toMatchObject({ status: 'finished', phase: 'grpo', lastStep: 30, evalBefore: { accuracy: 0.31 } });
    expect(finished.latest['reward/mean']).toBeCloseTo(0.9268, 6);
    expect(finished.latest['eval/accuracy']).toBeCloseTo(finished.evalAfter.accuracy, 6);
    const live = json.runs.find((run: { id: string }) => run.id === liveId);
    // No summary.json, and the copy was just written: the run counts as still going.
    expect(live).toMatchObject({ status: 'running', lastStep: 12, evalAfter: null });
  });

  it('serves metrics, leaving a half-written last line for the next poll', async () => {
    const { json } = await getJson(`/api/runs/${liveId}/metrics`);
    expect(json.rows).toHaveLength(12);
    expect(json.rows.map((row: { step: number }) => row.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(json).toMatchObject({ partialLastLine: true, nextLine: 13, problems: [] });
    const later = await getJson(`/api/runs/${liveId}/metrics?fromLine=11`);
    expect(later.json.rows.map((row: { step: number }) => row.step)).toEqual([11, 12]);
  });

  it('picks up appended lines once the writer finishes them', async () => {
    const path = join(runsDirectory, liveId, 'metrics.jsonl');
    // The fixture's last line stops inside the time string: "time":"2026-01-02T09:01:48.000
    expect(await readFile(path, 'utf8')).toMatch(/"time":"[^"]+\.000$/);
    await appendFile(path, 'Z","reward/mean":0.9}\n{"step":14,"phase":"grpo","reward/mean":0.95}\n');
    const { json } = await getJson(`/api/runs/${liveId}/metrics?fromLine=13`);
    expect(json.rows.map((row: { step: number }) => row.step)).toEqual([13, 14]);
    expect(json).toMatchObject({ partialLastLine: false, nextLine: 15, problems: [] });
  });

  it('reports corrupt metric lines by file and line and keeps the good ones', async () => {
    const { json } = await getJson('/api/runs/broken/metrics');
    expect(json.rows.map((row: { step: number }) => row.step)).toEqual([1, 3]);
    expect(json.problems).toEqual([
      expect.stringMatching(/^metrics\.jsonl line 2: not valid JSON/),
      'metrics.jsonl line 3: field "step" is missing or not a number',
    ]);
  });

  it('thins a long metrics file to about maxRows rows, keeping every evaluation line and the last', async () => {
    // 20,001 lines: a step line each, an evaluation line every 1000 steps.
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ step: i + 1, 'reward/mean': i }));
    for (let step = 1000; step <= 20_000; step += 1000)
      lines.splice(step + step / 1000 - 1, 0, JSON.stringify({ step, 'eval/accuracy': step / 20_000 }));
    await mkdir(join(runsDirectory, 'long'));
    await writeFile(join(runsDirectory, 'long', 'metrics.jsonl'), lines.join('\n') + '\n');
    const { json } = await getJson('/api/runs/long/metrics?fromLine=1&maxRows=500');
    expect(json.sampled).toEqual({ every: 41, of: 20_020 }); // ⌈20020 / 500⌉
    const evaluations = json.rows.filter((row: Record<string, number>) => 'eval/accuracy' in row);
    expect(evaluations.map((row: { step: number }) => row.step)).toEqual(
      Array.from({ length: 20 }, (_, i) => 1000 * (i + 1)),
    );
    expect(json.rows.length).toBeLessThanOrEqual(Math.ceil(20_020 / 41) + 20 + 1);
    expect(json.rows.at(-1)).toEqual({ step: 20_000, 'eval/accuracy': 1 }); // the last line is kept
    expect(json.rows[1]['reward/mean']).toBe(41); // every 41st line
    expect(json.nextLine).toBe(20_021); // polling goes on after the whole file
    // A short answer is not thinned; a bad maxRows is refused naming it.
    const tail = await getJson('/api/runs/long/metrics?fromLine=20000&maxRows=500');
    expect(tail.json.sampled).toBeUndefined();
    expect(tail.json.rows).toHaveLength(21);
    for (const bad of ['10', '1e9', 'many'])
      expect(await getJson(`/api/runs/long/metrics?maxRows=${bad}`)).toMatchObject({
        status: 400,
        json: { error: 'maxRows must be an integer from 100 to 100000' },
      });
  });

  it('serves sample steps, the groups of one step, config, summary and run details', async () => {
    const steps = await getJson(`/api/runs/${finishedId}/samples`);
    expect(steps.json.steps).toEqual([5, 10, 15, 20, 25, 30].map((step) => ({ phase: 'grpo', step, groups: 2 })));
    const groups = await getJson(`/api/runs/${finishedId}/samples?phase=grpo&step=5`);
    expect(groups.json.groups).toHaveLength(2);
    expect(groups.json.groups[0]).toMatchObject({ step: 5, prompt: '10+26=', answer: '36' });
    expect(groups.json.groups[0].completions[0]).toMatchObject({ text: '36</a>', advantage: 0.8588 });
    expect((await getJson(`/api/runs/${finishedId}/samples?step=6`)).status).toBe(404);
    expect((await getJson(`/api/runs/${finishedId}/config`)).json.sampling.groupSize).toBe(4);
    expect((await getJson(`/api/runs/${finishedId}/summary`)).json.status).toBe('finished');
    const missing = await getJson(`/api/runs/${liveId}/summary`);
    expect(missing.status).toBe(404);
    expect(missing.json.error).toContain('summary.json');
    expect((await getJson(`/api/runs/${finishedId}`)).json.checkpoints).toEqual(['step-30']);
    expect((await getJson('/api/runs/no-such-run/metrics')).status).toBe(404);
    expect((await getJson(`/api/runs/${finishedId}/metrics?fromLine=0`)).status).toBe(400);
  });

  it('lists and serves the image grids of a flow run, in step order, and no other file', async () => {
    const folder = join(runsDirectory, 'flow-run');
    await mkdir(folder);
    await writeFile(join(folder, 'metrics.jsonl'), '{"step":0,"eval/reward/mean":0.5}\n');
    const grid = (width: number) => {
      const png = new PNG({ width, height: 3 });
      png.data.fill(200);
      return PNG.sync.write(png);
    };
    for (const [name, width] of [
      ['samples-step-10.png', 5],
      ['samples-step-2.png', 4],
      ['notes.png', 6],
    ] as const)
      await writeFile(join(folder, name), grid(width));
    await symlink(join(scratch, 'secret.json'), join(folder, 'samples-step-3.png')); // a link out: never served
    const list = await getJson('/api/runs/flow-run/images');
    expect(list.json.images.map((image: { name: string }) => image.name)).toEqual([
      'samples-step-2.png',
      'samples-step-10.png',
    ]);
    const image = await rawBytes('/api/runs/flow-run/images/samples-step-10.png');
    expect(image.status).toBe(200);
    expect(image.type).toBe('image/png');
    expect(PNG.sync.read(image.body).width).toBe(5);
    expect((await rawBytes('/api/runs/flow-run/images/notes.png')).status).toBe(404);
    expect((await rawBytes('/api/runs/flow-run/images/metrics.jsonl')).status).toBe(403); // not a .png name: refused, as for sample images
    expect((await rawBytes('/api/runs/flow-run/images/samples-step-3.png')).status).toBe(403);
    expect((await rawBytes('/api/runs/flow-run/images/..%2Fsecret.json')).status).toBe(403);
    expect((await getJson(`/api/runs/${finishedId}/images`)).json.images).toEqual([]);
    expect((await getJson('/api/runs/flow-run/samples')).json.steps).toEqual([]); // no samples.jsonl: none, not an error
    expect((await getJson('/api/runs/no-such-run/samples')).status).toBe(404);
  });

  it('serves the page and its scripts with a same-origin content security policy', async () => {
    const page = await rawRequest('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.body).toContain('<script type="module" src="app.js">');
    for (const script of ['/app.js', '/chart.js', '/series.js', '/samples.js', '/dom.js']) {
      const response = await rawRequest(script);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toContain('javascript');
    }
    expect((await rawRequest('/server.ts')).status).toBe(404);
    expect((await rawRequest('/constructor')).status).toBe(404);
  });
});

describe('dashboard is read-only and stays inside the runs folder', () => {
  it.each(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])('answers %s with 405', async (method) => {
    const response = await rawRequest('/api/runs', method);
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe('GET, HEAD');
  });

  it('answers HEAD with headers and no body', async () => {
    const response = await rawRequest('/api/runs', 'HEAD');
    expect(response.status).toBe(200);
    expect(Number(response.headers['content-length'])).toBeGreaterThan(10);
    expect(response.body).toBe('');
  });

  it.each([
    '/../secret.json',
    '/api/runs/../../secret.json',
    '/api/runs/..%2f..%2fsecret.json',
    '/api/runs/%2e%2e/config',
    '/api/runs/%2E%2E/summary',
    '/api/runs/.%2e/outside-run/config',
    '/api/runs/..%5c..%5csecret.json/config',
    '/api/runs/%2fetc%2fpasswd/config',
    '/api/runs/%2Fetc/config',
    `/api/runs/${finishedId}/..%2f..%2f..%2fsecret.json`,
    '/%2e%2e/%2e%2e/secret.json',
    '/api/runs/escape-link/config',
    '/api/runs/escape-link/metrics',
    '/api/runs/escape-link',
    '/api/runs/linked-files/config',
    '/api/runs/linked-files/metrics',
    '/api/runs/.hidden/config',
    '//etc/passwd',
    '/api/runs//etc/config',
  ])('refuses %s', async (path) => {
    const response = await rawRequest(path);
    expect([403, 404]).toContain(response.status);
    expect(response.body).not.toContain(secret);
    expect(response.body).not.toContain('root:');
  });

  it('refuses symlinks that point outside with 403, not just 404', async () => {
    expect((await rawRequest('/api/runs/escape-link/config')).status).toBe(403);
    expect((await rawRequest('/api/runs/linked-files/metrics')).status).toBe(403);
    expect((await rawRequest('/api/runs/%2e%2e/config')).status).toBe(403);
    // Refused by the URL check itself, before any route or file lookup.
    expect((await rawRequest('/%2e%2e')).status).toBe(403);
    expect((await rawRequest('/..%2fpackage.json')).status).toBe(403);
  });

  it('refuses a foreign Host header (DNS rebinding) but accepts loopback names', async () => {
    expect((await rawRequest('/api/runs', 'GET', 'attacker.example:80')).status).toBe(403);
    expect((await rawRequest('/api/runs', 'GET', `localhost:${port}`)).status).toBe(200);
  });

  it('rejects a missing runs folder and a bad port with messages naming them', async () => {
    await expect(startDashboard({ runsDirectory: join(scratch, 'nope'), port: 0 })).rejects.toThrow(
      /runs folder .*nope does not exist/,
    );
    await expect(runDashboardCommand({ runs: runsDirectory, port: 'abc', log: () => {} })).rejects.toThrow(
      /--port must be an integer/,
    );
    await expect(startDashboard({ runsDirectory, port: port, host: '127.0.0.1' })).rejects.toThrow(/already in use/);
  });

  it('runDashboardCommand prints the URL it serves', async () => {
    const lines: string[] = [];
    const handle = await runDashboardCommand({ runs: runsDirectory, port: 0, log: (line) => lines.push(line) });
    try {
      expect(lines[0]).toContain(handle.url);
      expect((await fetch(`${handle.url}api/runs`)).status).toBe(200);
    } finally {
      await handle.close();
    }
  });
});

describe('sample images (vision-language runs)', () => {
  it('serves images/NAME.png of a run as image/png and refuses other names and paths', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    await mkdir(join(runsDirectory, finishedId, 'images'), { recursive: true });
    await writeFile(join(runsDirectory, finishedId, 'images', 'step-1-0-0.png'), png);
    await writeFile(join(runsDirectory, finishedId, 'images', 'notes.txt'), secret);
    const image = await new Promise<{ status: number; type?: string; bytes: Buffer }>((resolve, reject) => {
      const path = `/api/runs/${finishedId}/images/step-1-0-0.png`;
      request({ host: '127.0.0.1', port, path }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () =>
          resolve({
            status: incoming.statusCode ?? 0,
            type: incoming.headers['content-type'],
            bytes: Buffer.concat(chunks),
          }),
        );
      })
        .on('error', reject)
        .end();
    });
    expect(image).toEqual({ status: 200, type: 'image/png', bytes: png });
    expect((await rawRequest(`/api/runs/${finishedId}/images/notes.txt`)).status).toBe(403); // not a .png name
    expect((await rawRequest(`/api/runs/${finishedId}/images/..%2fconfig.json`)).status).toBe(403);
    expect((await rawRequest(`/api/runs/${finishedId}/images/missing.png`)).status).toBe(404);
    expect((await rawRequest(`/api/runs/escape-link/images/step-1-0-0.png`)).status).toBe(404); // no such file there
  });
});
