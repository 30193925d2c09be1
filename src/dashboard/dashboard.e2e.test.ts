/*
 * End-to-end test of the dashboard page in a real headless Chromium (Debian's `chromium`,
 * driven by `playwright-core`): the fixture runs load, the curves are drawn as SVG paths with
 * points, a sample step opens with its completions, per-reward scores and advantages, and the
 * page picks up new metric lines of a running run by polling, and a flow run's image grids show by step.
 * Without Chromium or playwright-core it skips with a message, except under CI=true, where it
 * fails: CI must install both (.ci/run). Set DASHBOARD_SCREENSHOT=/path.png to save a screenshot.
 * It is not a visual test: layout is checked by eye from that screenshot during development.
 */
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { startDashboard, type DashboardHandle } from './server.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const fixtureRuns = new URL('../../test/fixtures/runs/', import.meta.url);
const finishedId = '20260101-120000-arithmetic';
const liveId = '20260102-090000-arithmetic-live';

/** Why the browser test cannot run here, or null when it can. */
async function findBrowserProblem(): Promise<string | null> {
  if (!existsSync(chromiumPath)) return `no Chromium at ${chromiumPath} (apt-get install -y chromium)`;
  try {
    await import('playwright-core');
  } catch {
    return 'playwright-core is not installed (npm install)';
  }
  return null;
}

const browserProblem = await findBrowserProblem();
const mustRun = process.env.CI === 'true';
if (browserProblem !== null && !mustRun) console.warn(`skipping the dashboard browser test: ${browserProblem}`);

if (browserProblem !== null && mustRun) {
  it('has Chromium and playwright-core, which CI=true requires', () => {
    throw new Error(`CI=true and the dashboard browser test cannot run: ${browserProblem}`);
  });
}

describe.skipIf(browserProblem !== null)('dashboard page in headless Chromium', () => {
  let scratch: string;
  let dashboard: DashboardHandle;
  let context: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const foreignRequests: string[] = [];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'grpo-dashboard-e2e-'));
    await cp(fixtureRuns, join(scratch, 'runs'), { recursive: true });
    dashboard = await startDashboard({ runsDirectory: join(scratch, 'runs'), port: 0 });
    const { chromium } = await import('playwright-core');
    context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
      executablePath: chromiumPath,
      headless: true,
      viewport: { width: 1400, height: 1000 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(dashboard.url)) foreignRequests.push(request.url());
    });
    await page.goto(`${dashboard.url}?poll=250#run=${finishedId}`);
  }, 30_000);

  afterAll(async () => {
    await context?.close();
    await dashboard?.close();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  /** Number of points in an SVG path's data (one M or L command each). */
  async function pointsDrawn(chart: string, series: string): Promise<number> {
    const data = await page.locator(`[data-chart="${chart}"] path.series[data-series="${series}"]`).getAttribute('d');
    return (data ?? '').match(/[ML]/g)?.length ?? 0;
  }

  it('lists both fixture runs and opens the one named in the URL', async () => {
    await page.locator('#runs li[data-run]').nth(1).waitFor();
    expect(
      await page
        .locator('#runs li[data-run]')
        .evaluateAll((items) => items.map((item) => (item as HTMLElement).dataset.run)),
    ).toEqual([liveId, finishedId]);
    await expect.poll(() => page.locator('#runs li.selected').getAttribute('data-run')).toBe(finishedId);
    await expect.poll(() => page.locator('#run-header').textContent()).toContain('eval before 0.31');
    expect(await page.locator('#run-header').textContent()).toContain('checkpoints step-30');
  });

  it('draws the metric curves as SVG paths through every logged step', async () => {
    await page.locator('[data-chart="reward"] path.series').first().waitFor();
    // 30 GRPO steps; SFT rows have no reward. Per-reward series are drawn beside the overall one.
    expect(await pointsDrawn('reward', 'reward/mean')).toBe(30);
    expect(await pointsDrawn('reward', 'reward/correct/mean')).toBe(30);
    expect(await pointsDrawn('reward', 'reward/format/mean')).toBe(30);
    expect(await pointsDrawn('eval', 'eval/accuracy')).toBe(3); // evals at steps 10, 20, 30
    expect(await pointsDrawn('kl', 'loss/kl')).toBe(30);
    expect(await pointsDrawn('entropy', 'entropy')).toBe(30);
    expect(await pointsDrawn('lengths', 'completions/meanLength')).toBe(30);
    expect(await pointsDrawn('clip', 'clip/high')).toBe(30);
    expect(await pointsDrawn('loss', 'loss/sft')).toBe(10);
    // A path whose points all sat on one spot would mean broken scaling.
    const box = await page.locator('[data-chart="reward"] path.series').first().boundingBox();
    expect(box?.width).toBeGreaterThan(100);
    expect(box?.height).toBeGreaterThan(20);
  });

  it('opens a sample step: the prompt, the group completions, per-reward scores and advantages', async () => {
    await page.locator('#sample-steps button[data-step="5"]').click();
    const firstGroup = page.locator('.group').first();
    await firstGroup.locator('tr.completion').first().waitFor();
    expect(await page.locator('.group').count()).toBe(2);
    expect(await firstGroup.locator('.prompt').textContent()).toBe('10+26=');
    expect(await firstGroup.locator('tr.completion').count()).toBe(4);
    expect(await firstGroup.locator('th').allTextContents()).toEqual([
      '#',
      'completion',
      'reward',
      'correct',
      'format',
      'brevity',
      'advantage',
      'length',
      'finish',
    ]);
    expect(await firstGroup.locator('tr.completion').first().locator('td').allTextContents()).toEqual([
      '1',
      '36</a>',
      '1.2',
      '1',
      '1',
      '0.7',
      '0.8588',
      '6',
      'stop',
    ]);
    // The fourth completion's format reward threw: shown as an error, with no advantage.
    expect(await firstGroup.locator('tr.completion').nth(3).locator('td.error').textContent()).toBe('error');
    if (process.env.DASHBOARD_SCREENSHOT)
      await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });
  });

  it('refreshes a running run as new metric lines arrive', async () => {
    await page.locator(`#runs li[data-run="${liveId}"]`).click();
    await expect.poll(() => pointsDrawn('reward', 'reward/mean')).toBe(12);
    await expect.poll(() => page.locator('#live').textContent()).toContain('live');
    // The writer finishes its half-written line 13 and appends step 14.
    const metrics = join(scratch, 'runs', liveId, 'metrics.jsonl');
    await appendFile(metrics, 'Z","reward/mean":0.9}\n{"step":14,"phase":"grpo","reward/mean":0.95}\n');
    await expect.poll(() => pointsDrawn('reward', 'reward/mean'), { timeout: 5_000 }).toBe(14);
  });

  it('shows an agent episode turn by turn: roles, tool calls, masked observation tokens apart', async () => {
    const agentId = '20260103-100000-agent';
    const folder = join(scratch, 'runs', agentId);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify({ task: 'addition', agent: { maxTurns: 3 } }));
    await writeFile(join(folder, 'summary.json'), JSON.stringify({ status: 'finished', steps: 1 }));
    await writeFile(join(folder, 'metrics.jsonl'), '{"step":1,"phase":"grpo","reward/mean":0.5,"turns/mean":2}\n');
    const episode = {
      turns: 2,
      stopReason: 'stop',
      turnRewards: [null, null],
      messages: [
        { role: 'user', content: 'What is 12*7?' },
        {
          role: 'assistant',
          content: '<tool_call>{"name": "calculator", "arguments": {"expression": "12*7"}}</tool_call>',
        },
        { role: 'tool', content: '84' },
        { role: 'assistant', content: '84' },
      ],
      toolCalls: [{ turn: 0, name: 'calculator', arguments: { expression: '12*7' }, result: '84' }],
      rows: [
        {
          segments: [
            { text: '<tool_call>…</tool_call>', trained: true },
            { text: '\ntool: 84\nAssistant:', trained: false },
            { text: '84', trained: true },
          ],
        },
      ],
    };
    const completion = {
      text: '84',
      reward: 1,
      rewards: { correct: 1 },
      advantage: 0.5,
      length: 40,
      finishReason: 'stop',
      episode,
    };
    await writeFile(
      join(folder, 'samples.jsonl'),
      `${JSON.stringify({ step: 1, phase: 'grpo', prompt: 'What is 12*7?', answer: '84', completions: [completion] })}\n`,
    );
    await page.goto(`${dashboard.url}?poll=251#run=${agentId}`); // another query: a fresh load, not a hash change
    await page.locator('#sample-steps button[data-step="1"]').click();
    const details = page.locator('details.episode').first();
    await details.waitFor();
    expect(await details.locator('summary').textContent()).toBe('episode: 2 turn(s), stop stop, 1 tool call(s)');
    await details.locator('summary').click();
    expect(await details.locator('.turn .role').allTextContents()).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(await details.locator('.tool-call').textContent()).toBe('turn 0: calculator({"expression":"12*7"}) → 84');
    expect(await details.locator('.tokens .masked').allTextContents()).toEqual(['\ntool: 84\nAssistant:']);
    expect(await details.locator('.tokens .trained').count()).toBe(2);
  });

  it('shows the image grids of a flow run by step, decoded by the browser', async () => {
    const flowId = '20260104-100000-flow-grpo';
    const folder = join(scratch, 'runs', flowId);
    await mkdir(folder, { recursive: true });
    const summary = {
      status: 'finished',
      steps: 2,
      evalBefore: { 'eval/reward/mean': 0.4 },
      evalAfter: { 'eval/reward/mean': 0.7 },
    };
    await writeFile(join(folder, 'summary.json'), JSON.stringify(summary));
    await writeFile(join(folder, 'config.json'), JSON.stringify({ algorithm: 'flow-grpo', steps: 2 }));
    await writeFile(
      join(folder, 'metrics.jsonl'),
      ['{"step":0,"eval/reward/mean":0.4}', '{"step":1,"reward/mean":0.5}', '{"step":2,"reward/mean":0.6}', '{"step":2,"eval/reward/mean":0.7}', ''].join('\n'),
    ); // prettier-ignore
    for (const [step, width] of [
      [0, 21],
      [2, 23],
    ]) {
      const png = new PNG({ width, height: 11 });
      png.data.fill(255);
      await writeFile(join(folder, `samples-step-${step}.png`), PNG.sync.write(png));
    }
    await page.goto(`${dashboard.url}?poll=252#run=${flowId}`);
    await page.locator('#image-grids figure[data-step="2"] img').waitFor();
    expect(await page.locator('#images').isVisible()).toBe(true);
    expect(await page.locator('#image-grids figcaption').allTextContents()).toEqual(['step 0', 'step 2']);
    await expect
      .poll(() =>
        page
          .locator('#image-grids img')
          .evaluateAll((images) => images.map((image) => (image as HTMLImageElement).naturalWidth)),
      )
      .toEqual([21, 23]);
    expect(await pointsDrawn('eval', 'eval/reward/mean')).toBe(2);
    expect(await page.locator('#run-header').textContent()).toContain('eval before 0.4');
    await page.goto(`${dashboard.url}?poll=253#run=${finishedId}`); // a text run has no image panel
    await page.locator('[data-chart="reward"] path.series').first().waitFor();
    expect(await page.locator('#images').isVisible()).toBe(false);
  });

  it('logs no errors and loads nothing from outside the dashboard', () => {
    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
  });
});
