/*
 * End-to-end test of the dashboard page in a real headless Chromium (Debian's `chromium`,
 * driven by `playwright-core`): the fixture runs load, the curves are drawn as SVG paths with
 * points, a sample step opens with its completions, per-reward scores and advantages, and the
 * page picks up new metric lines of a running run by polling, and a flow run's image grids show by step;
 * a finished run's header has no stray "null", a failed run without metrics says so in a sentence,
 * two runs compared draw one series each per chart with a legend, smoothing redraws the curves over
 * the faint raw ones, the log scale toggles, and sample steps are paged.
 * Without Chromium or playwright-core it skips with a message, except under CI=true, where it
 * fails: CI must install both (.ci/run). Set DASHBOARD_SCREENSHOT=/path.png to save a screenshot.
 * It is not a visual test: layout is checked by eye from that screenshot during development.
 */
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { startDashboard, type DashboardHandle } from './server.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const fixtureRuns = testFixture('runs');
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

  it("shows no literal null in a finished run's header (a run without a reason)", async () => {
    await expect.poll(() => page.locator('#run-header').textContent()).toContain('eval before 0.31');
    const header = await page.locator('#run-header').textContent();
    expect(header).toContain('finished');
    expect(header).not.toContain('null');
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
    // Its metrics have no phase: the step is shown alone, not as "null 2".
    expect(await page.locator('#run-header').textContent()).toContain('step 2eval before');
    expect(await page.locator('#run-header').textContent()).not.toContain('null');
    await page.goto(`${dashboard.url}?poll=253#run=${finishedId}`); // a text run has no image panel
    await page.locator('[data-chart="reward"] path.series').first().waitFor();
    expect(await page.locator('#images').isVisible()).toBe(false);
  });

  it('says in a sentence why a failed run that wrote no metrics has no curves, with its reason', async () => {
    const failedId = '20260105-100000-failed';
    const folder = join(scratch, 'runs', failedId);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify({ task: 'dataset', steps: 5 }));
    const reason = 'taskOptions.trainFile: data/train.jsonl does not exist';
    await writeFile(join(folder, 'summary.json'), JSON.stringify({ status: 'failed', reason }));
    const metricsRequests: string[] = [];
    const watch = (request: { url(): string }) => {
      if (request.url().includes(`${failedId}/metrics`)) metricsRequests.push(request.url());
    };
    page.on('request', watch);
    await page.goto(`${dashboard.url}?poll=254#run=${failedId}`);
    const sentence = page.locator('#charts .no-metrics');
    await sentence.waitFor();
    expect(await sentence.textContent()).toBe(
      `No curves: this run failed before it wrote any metrics (its folder has no metrics.jsonl). Reason from summary.json: ${reason}`,
    );
    expect(await page.locator('#problems').textContent()).toBe(''); // no raw "…/metrics?fromLine=1: not found"
    expect(await page.locator('#run-header').textContent()).not.toContain('null');
    expect(metricsRequests).toEqual([]); // the runs list said there is no metrics.jsonl: no 404 asked for
    page.off('request', watch);
  });

  it('draws a long run from a thinned first fetch, says so, and then takes new lines in full', async () => {
    const longId = '20260106-100000-long';
    const folder = join(scratch, 'runs', longId);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify({ task: 'addition' }));
    const lines = Array.from({ length: 3000 }, (_, i) =>
      JSON.stringify({ step: i + 1, phase: 'grpo', 'reward/mean': i / 3000 }),
    );
    await writeFile(join(folder, 'metrics.jsonl'), lines.join('\n') + '\n');
    await page.goto(`${dashboard.url}?poll=257&maxRows=200#run=${longId}`);
    await page.locator('[data-chart="reward"] path.series').first().waitFor();
    // 3000 lines at most 200 a fetch: every 15th (0, 15, …, 2985) and the last.
    expect(await pointsDrawn('reward', 'reward/mean')).toBe(201);
    expect(await page.locator('#problems').textContent()).toContain(
      'showing every 15th of the first 3000 metric lines (evaluation lines all kept); later lines in full',
    );
    await appendFile(
      join(folder, 'metrics.jsonl'),
      JSON.stringify({ step: 3001, phase: 'grpo', 'reward/mean': 1 }) + '\n',
    );
    await expect.poll(() => pointsDrawn('reward', 'reward/mean')).toBe(202);
  });

  it('compares two runs: one series per run in every chart, each run its colour, with a legend', async () => {
    await page.goto(`${dashboard.url}?poll=255#run=${finishedId}`);
    await page.locator('[data-chart="entropy"] path.series').waitFor();
    await page.locator(`#runs li[data-run="${liveId}"] input[data-compare]`).check();
    const entropy = page.locator('[data-chart="entropy"] path.series');
    await expect.poll(() => entropy.count()).toBe(2);
    expect(await entropy.evaluateAll((paths) => paths.map((path) => (path as SVGElement).dataset.run))).toEqual([
      finishedId,
      liveId,
    ]);
    const strokes = await entropy.evaluateAll((paths) => paths.map((path) => path.getAttribute('stroke')));
    expect(new Set(strokes).size).toBe(2);
    // 30 GRPO steps of the finished run; the live run's 12 (its lines 13 and 14 log only a reward).
    expect(await entropy.evaluateAll((paths) => paths.map((path) => (path as SVGElement).dataset.points))).toEqual([
      '30',
      '12',
    ]);
    // A compared run that is still going is polled too: a new line of it joins the chart.
    await appendFile(join(scratch, 'runs', liveId, 'metrics.jsonl'), '{"step":15,"phase":"grpo","entropy":0.8}\n');
    await expect
      .poll(() => page.locator(`[data-chart="entropy"] path.series[data-run="${liveId}"]`).getAttribute('data-points'))
      .toBe('13');
    // The legend names each run beside its colour, in this chart and above all charts.
    expect(await page.locator('[data-chart="entropy"] .legend .item').allTextContents()).toEqual([
      expect.stringContaining(finishedId),
      expect.stringContaining(liveId),
    ]);
    expect(await page.locator('#compare-legend .item').allTextContents()).toEqual([finishedId, liveId]);
    // A chart of several metrics: each run's metrics in the run's colour, told apart by dash.
    const reward = page.locator('[data-chart="reward"] path.series[data-series="reward/mean"]');
    expect(await reward.count()).toBe(2);
    expect(await page.locator('[data-chart="reward"] path.series').count()).toBe(6);
    // Both runs' GRPO steps share one axis: the live run's last point lies left of the finished run's.
    const lastX = async (run: string) => {
      const data = await page.locator(`[data-chart="entropy"] path.series[data-run="${run}"]`).getAttribute('d');
      return Number(/([\d.]+) [\d.]+$/.exec(data ?? '')?.[1]);
    };
    expect(await lastX(liveId)).toBeLessThan(await lastX(finishedId));
    expect(page.url()).toContain(`compare=${liveId}`);
    // The selected run's samples still open.
    await page.locator('#sample-steps button[data-step="10"]').click();
    await expect.poll(() => page.locator('.group').count()).toBe(2);
    if (process.env.DASHBOARD_SCREENSHOT)
      await page.screenshot({
        path: process.env.DASHBOARD_SCREENSHOT.replace(/(\.png)?$/, '-compare.png'),
        fullPage: true,
      });
    await page.locator(`#runs li[data-run="${liveId}"] input[data-compare]`).uncheck();
    await expect.poll(() => entropy.count()).toBe(1);
    expect(await page.locator('#compare-legend').textContent()).toBe('');
  });

  it('smooths the curves with the EMA slider, the raw curve drawn faintly behind', async () => {
    const path = page.locator('[data-chart="entropy"] path.series');
    const rawData = await path.getAttribute('d');
    expect(await page.locator('[data-chart="entropy"] path.raw').count()).toBe(0);
    const setSmoothing = (value: string) =>
      page.locator('#smoothing').evaluate((slider, text) => {
        (slider as HTMLInputElement).value = text;
        slider.dispatchEvent(new Event('input', { bubbles: true }));
      }, value);
    await setSmoothing('0.9');
    await expect.poll(() => path.getAttribute('d')).not.toBe(rawData);
    expect(await page.locator('#smoothing-value').textContent()).toBe('0.90');
    expect(await page.locator('[data-chart="entropy"] path.raw').getAttribute('d')).toBe(rawData);
    expect(await pointsDrawn('entropy', 'entropy')).toBe(30);
    // The legend's latest value is TensorBoard's smoothed last value, computed here from the file.
    const lines = (await readFile(join(scratch, 'runs', finishedId, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    const values = lines.map((line) => JSON.parse(line).entropy).filter((value) => typeof value === 'number');
    const { smoothEma, formatNumber } = await import(new URL('./public/chart.js', import.meta.url).href);
    const legendValue = await page.locator('[data-chart="entropy"] .legend .value').first().textContent();
    expect(legendValue?.trim()).toBe(formatNumber(smoothEma(values, 0.9).at(-1)));
    expect(page.url()).toContain('smoothing=0.9');
    await setSmoothing('0');
    await expect.poll(() => path.getAttribute('d')).toBe(rawData);
    expect(await page.locator('[data-chart="entropy"] path.raw').count()).toBe(0);
  });

  it('toggles a log y axis, naming the series whose values ≤ 0 cannot be drawn on it', async () => {
    const svg = (chart: string) => page.locator(`[data-chart="${chart}"] svg`);
    const linearData = await page.locator('[data-chart="entropy"] path.series').getAttribute('d');
    expect(await svg('lr').getAttribute('data-scale')).toBe('linear');
    await page.locator('#log-scale').check();
    await expect.poll(() => svg('lr').getAttribute('data-scale')).toBe('log');
    expect(await page.locator('[data-chart="entropy"] path.series').getAttribute('d')).not.toBe(linearData);
    // The learning rate runs from 1e-3 (SFT) to 5e-6 (GRPO): a tick per decade.
    expect(await svg('lr').locator('text.tick').allTextContents()).toEqual(
      expect.arrayContaining(['1.00e-5', '1.00e-4', '0.001']),
    );
    // The policy loss is negative at some steps: left out on the log axis, and the chart says so.
    expect(await page.locator('[data-chart="loss"] .note').textContent()).toContain('values ≤ 0 left out (loss/policy');
    expect(page.url()).toContain('log=1');
    await page.locator('#log-scale').uncheck();
    await expect.poll(() => svg('lr').getAttribute('data-scale')).toBe('linear');
    expect(await page.locator('[data-chart="entropy"] path.series').getAttribute('d')).toBe(linearData);
    expect(await page.locator('[data-chart="loss"] .note').count()).toBe(0);
  });

  it('pages the sample steps 20 at a time and opens any step from the picker', async () => {
    const manyId = '20260106-100000-many-steps';
    const folder = join(scratch, 'runs', manyId);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'summary.json'), JSON.stringify({ status: 'finished', steps: 45 }));
    await writeFile(join(folder, 'config.json'), JSON.stringify({ task: 'addition', logging: { samplesEvery: 1 } }));
    const steps = Array.from({ length: 45 }, (_, k) => k + 1);
    await writeFile(
      join(folder, 'metrics.jsonl'),
      steps.map((step) => `${JSON.stringify({ step, phase: 'grpo', 'reward/mean': step / 45 })}\n`).join(''),
    );
    const completion = { text: 'x', reward: 0, rewards: { correct: 0 }, advantage: 0, length: 1, finishReason: 'stop' };
    await writeFile(
      join(folder, 'samples.jsonl'),
      steps
        .map(
          (step) => `${JSON.stringify({ step, phase: 'grpo', prompt: `prompt ${step}`, completions: [completion] })}\n`,
        )
        .join(''),
    );
    await page.goto(`${dashboard.url}?poll=256#run=${manyId}`);
    const buttons = page.locator('#sample-steps .step-buttons button');
    await expect.poll(() => buttons.count()).toBe(20);
    expect(await page.locator('#sample-steps .page-label').textContent()).toBe(
      'grpo 1 – grpo 20 (page 1 of 3, 45 steps)',
    );
    expect(await page.locator('#sample-steps .page-previous').isDisabled()).toBe(true);
    expect(await page.locator('#sample-steps button[data-step="25"]').count()).toBe(0);
    await page.locator('#sample-steps .page-next').click();
    expect(await buttons.first().getAttribute('data-step')).toBe('21');
    await page.locator('#sample-steps button[data-step="25"]').click();
    await expect.poll(() => page.locator('.group .prompt').textContent()).toBe('prompt 25');
    await page.locator('#step-picker').selectOption('grpo/45');
    await expect.poll(() => page.locator('.group .prompt').textContent()).toBe('prompt 45');
    expect(await buttons.count()).toBe(5); // the last page: steps 41–45
    expect(await page.locator('#sample-steps button.selected').getAttribute('data-step')).toBe('45');
    expect(await page.locator('#sample-steps .page-next').isDisabled()).toBe(true);
  });

  it('logs no errors and loads nothing from outside the dashboard', () => {
    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
  });
});
