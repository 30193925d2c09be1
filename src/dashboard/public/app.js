/*
 * The dashboard page's logic: fetch the runs list and a run's metrics and samples from the JSON
 * API, draw the curves (chart.js), show the image grids of flow runs by step, browse samples by
 * step, and poll while a run is going.
 * It never writes anything (the API is read-only) and never puts file content into innerHTML:
 * completions are model output, so every text goes through textContent.
 * Query parameter `poll=<ms>` changes the refresh interval (tests use a short one).
 */
import { formatNumber, renderLineChart } from './chart.js';

const pollMilliseconds = Math.max(200, Number(new URLSearchParams(location.search).get('poll')) || 3000);
// Runs that no longer write: the page stops polling their metrics (an interrupted run polls again once resumed).
const finishedStatuses = new Set(['finished', 'failed', 'interrupted']);

/** Charts in display order; `names` are metric names, `match` picks a family of them. */
const chartDefinitions = [
  {
    id: 'reward',
    title: 'Reward (overall and per reward)',
    match: (name) => name === 'reward/mean' || /^reward\/.+\/mean$/.test(name),
  },
  {
    id: 'eval',
    title: 'Evaluation',
    match: (name) =>
      ['eval/accuracy', 'eval/passAtK', 'eval/meanReward'].includes(name) || /^eval\/reward\//.test(name),
  },
  { id: 'kl', title: 'KL', names: ['loss/kl', 'kl/approx'] },
  { id: 'entropy', title: 'Entropy', names: ['entropy'] },
  {
    id: 'lengths',
    title: 'Completion length (tokens)',
    names: ['completions/meanLength', 'completions/minLength', 'completions/maxLength'],
  },
  {
    id: 'clip',
    title: 'Clip and truncation fractions',
    names: ['clip/low', 'clip/high', 'clip/region', 'completions/clippedRatio'],
  },
  { id: 'loss', title: 'Loss', names: ['loss/policy', 'loss/total', 'loss/sft', 'loss/flowMatching'] },
  { id: 'gradNorm', title: 'Gradient norm', names: ['gradNorm'] },
  { id: 'lr', title: 'Learning rate', names: ['lr'] },
  { id: 'speed', title: 'Tokens per second', names: ['tokensPerSecond'] },
];

const state = {
  runs: [],
  selectedId: null,
  /** Bumped on every run switch so answers for the previous run are dropped. */
  generation: 0,
  rows: [],
  nextLine: 1,
  problems: [],
  sampleSteps: [],
  selectedStep: null,
  /** The run's image grids ({ name, step }), shown when a flow run wrote any. */
  images: [],
  lastUpdate: null,
};

const byId = (id) => document.getElementById(id);

/** Create an element with properties (className, dataset entries, on* handlers) and children. */
function element(tag, properties = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(properties)) {
    if (name === 'dataset') Object.assign(node.dataset, value);
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node[name] = value;
  }
  node.append(
    ...children
      .filter((child) => child !== null && child !== undefined)
      .map((child) => (typeof child === 'object' ? child : String(child))),
  );
  return node;
}

async function fetchJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(`${path}: ${body.error ?? response.status}`);
  return body;
}

const runPath = (id) => `api/runs/${encodeURIComponent(id)}`;

function statusBadge(status, reason) {
  return element('span', { className: `status ${status}`, title: reason ?? '' }, status);
}

function renderRuns() {
  const list = byId('runs');
  if (state.runs.length === 0) {
    list.replaceChildren(element('li', { className: 'empty' }, 'No runs in this folder yet.'));
    return;
  }
  list.replaceChildren(
    ...state.runs.map((run) => {
      const facts = [
        run.lastStep === null ? 'no steps yet' : `${run.phase ?? ''} step ${run.lastStep}`,
        run.latest['reward/mean'] === undefined ? null : `reward ${formatNumber(run.latest['reward/mean'])}`,
        run.latest['eval/accuracy'] === undefined ? null : `eval ${formatNumber(run.latest['eval/accuracy'])}`,
      ]
        .filter(Boolean)
        .join(' · ');
      return element(
        'li',
        {
          className: run.id === state.selectedId ? 'selected' : '',
          dataset: { run: run.id },
          onclick: () => selectRun(run.id),
        },
        element('div', { className: 'id' }, run.id),
        statusBadge(run.status, run.reason),
        ' ',
        element('span', { className: 'facts' }, facts),
      );
    }),
  );
}

function evalText(summaryEval) {
  if (summaryEval === null || typeof summaryEval !== 'object') return '–';
  // A flow run (image models) evaluates a mean reward instead of an accuracy.
  const accuracy = summaryEval.accuracy ?? summaryEval['eval/accuracy'] ?? summaryEval['eval/reward/mean'];
  return accuracy === undefined ? JSON.stringify(summaryEval) : formatNumber(accuracy);
}

function renderRunHeader(run, checkpoints) {
  const fact = (label, value) => element('span', { className: 'fact' }, `${label} `, element('b', {}, value));
  byId('run-header').replaceChildren(
    element('span', { className: 'title' }, run.id),
    statusBadge(run.status, run.reason),
    run.reason ? element('span', { className: 'fact reason' }, run.reason) : null,
    fact('step', run.lastStep === null ? '–' : `${run.phase} ${run.lastStep}`),
    fact('eval before', evalText(run.evalBefore)),
    fact('eval after', evalText(run.evalAfter)),
    fact('checkpoints', checkpoints.length === 0 ? 'none' : checkpoints.join(', ')),
    fact('updated', run.updatedAt ? new Date(run.updatedAt).toLocaleString() : '–'),
  );
}

/** x position of each row: steps restart per phase, so later phases are shifted past earlier ones. */
function placeRows(rows) {
  const offsets = new Map();
  const phases = [];
  let maxX = 0;
  const placed = rows.map((row) => {
    const phase = String(row.phase ?? '');
    if (!offsets.has(phase)) {
      offsets.set(phase, maxX);
      phases.push({ x: maxX + 1, label: phase, offset: maxX });
    }
    const x = offsets.get(phase) + row.step;
    maxX = Math.max(maxX, x);
    return { x, row };
  });
  return { placed, phases };
}

function seriesFor(definition, placed) {
  const names = [];
  for (const { row } of placed) {
    for (const name of Object.keys(row)) {
      const wanted = definition.names ? definition.names.includes(name) : definition.match(name);
      if (wanted && typeof row[name] === 'number' && !names.includes(name)) names.push(name);
    }
  }
  if (definition.names) names.sort((a, b) => definition.names.indexOf(a) - definition.names.indexOf(b));
  else names.sort((a, b) => (a === 'reward/mean' ? -1 : b === 'reward/mean' ? 1 : 0));
  return names.map((name) => ({
    name,
    points: placed
      .filter(({ row }) => typeof row[name] === 'number' && Number.isFinite(row[name]))
      .map(({ x, row }) => [x, row[name]]),
  }));
}

function renderCharts() {
  const { placed, phases } = placeRows(state.rows);
  const container = byId('charts');
  const phaseAt = (x) => [...phases].reverse().find((entry) => x > entry.offset);
  const describeX = (x) => `${phaseAt(x)?.label ?? ''} step ${x - (phaseAt(x)?.offset ?? 0)}`;
  // Ticks show the step within its phase, as the metrics file counts it.
  const formatX = (x) => formatNumber(x - (phaseAt(x)?.offset ?? 0));
  const charts = [];
  for (const definition of chartDefinitions) {
    const series = seriesFor(definition, placed).filter((entry) => entry.points.length > 0);
    if (series.length === 0) continue;
    const section = element('section');
    renderLineChart(section, {
      id: definition.id,
      title: definition.title,
      series,
      phases: phases.length > 1 ? phases : [],
      describeX,
      formatX,
    });
    charts.push(section);
  }
  container.replaceChildren(...charts);
  if (charts.length === 0 && state.selectedId !== null)
    container.append(element('div', { className: 'panel empty' }, 'No metrics logged yet.'));
}

function renderProblems() {
  byId('problems').textContent = state.problems.slice(0, 8).join('\n');
}

function renderSampleSteps() {
  const steps = byId('sample-steps');
  if (state.sampleSteps.length === 0) {
    steps.replaceChildren(element('span', { className: 'empty' }, 'No samples logged yet.'));
    return;
  }
  steps.replaceChildren(
    ...state.sampleSteps.map((entry) => {
      const key = `${entry.phase}/${entry.step}`;
      return element(
        'button',
        {
          className: state.selectedStep === key ? 'selected' : '',
          dataset: { step: String(entry.step), phase: entry.phase },
          title: `${entry.groups} prompt group(s)`,
          onclick: () => openSampleStep(entry.phase, entry.step),
        },
        `${entry.phase} ${entry.step}`,
      );
    }),
  );
}

function renderImages() {
  byId('images').hidden = state.images.length === 0;
  byId('image-grids').replaceChildren(
    ...state.images.map((image) =>
      element(
        'figure',
        { dataset: { step: String(image.step) } },
        element('img', {
          src: `${runPath(state.selectedId)}/images/${encodeURIComponent(image.name)}`,
          alt: `samples at step ${image.step}`,
        }),
        element('figcaption', {}, `step ${image.step}`),
      ),
    ),
  );
}

function scoreCell(value) {
  if (value === 'error') return element('td', { className: 'error', title: 'the reward threw or timed out' }, 'error');
  if (value === null || value === undefined)
    return element('td', { className: 'missing', title: 'not applicable' }, '–');
  return element('td', {}, formatNumber(value));
}

/** An agent episode, turn by turn: messages by role, tool calls (failed ones marked), and each trained row's tokens with observation tokens (loss mask 0) shown apart. */
function renderEpisode(episode) {
  const list = (value) => (Array.isArray(value) ? value : []);
  const messages = list(episode.messages).map((message) =>
    element(
      'div',
      { className: `turn role-${String(message.role).replace(/[^a-z]/g, '')}` },
      element('span', { className: 'role' }, String(message.role)),
      String(message.content ?? ''),
    ),
  );
  const calls = list(episode.toolCalls).map((call) =>
    element(
      'div',
      { className: call.error === undefined ? 'tool-call' : 'tool-call failed' },
      `turn ${call.turn}: ${call.name || '(malformed)'}(${JSON.stringify(call.arguments ?? {})}) → ${call.result}`,
    ),
  );
  const rows = list(episode.rows).map((row, r) =>
    element(
      'div',
      { className: 'tokens' },
      element('span', { className: 'role' }, `row ${r + 1}`),
      ...list(row.segments).map((segment) =>
        element(
          'span',
          {
            className: segment.trained ? 'trained' : 'masked',
            title: segment.trained ? 'sampled: in the loss' : 'observation: loss mask 0',
          },
          String(segment.text ?? ''),
        ),
      ),
    ),
  );
  return element(
    'details',
    { className: 'episode' },
    element(
      'summary',
      {},
      `episode: ${episode.turns} turn(s), stop ${episode.stopReason}, ${calls.length} tool call(s)`,
    ),
    element('div', { className: 'messages' }, ...messages),
    calls.length > 0 ? element('div', { className: 'calls' }, ...calls) : null,
    element('div', { className: 'rows' }, ...rows),
  );
}

function renderGroup(group, index) {
  const completions = Array.isArray(group.completions) ? group.completions : [];
  const rewardNames = [...new Set(completions.flatMap((completion) => Object.keys(completion.rewards ?? {})))];
  const header = element(
    'tr',
    {},
    ...['#', 'completion', 'reward', ...rewardNames, 'advantage', 'length', 'finish'].map((name) =>
      element('th', { className: name === 'completion' ? 'text' : '' }, name),
    ),
  );
  const rows = completions.map((completion, k) => {
    const advantage = completion.advantage;
    const advantageClass =
      typeof advantage !== 'number' ? 'missing' : advantage > 0 ? 'positive' : advantage < 0 ? 'negative' : '';
    return element(
      'tr',
      { className: 'completion' },
      element('td', {}, k + 1),
      element(
        'td',
        { className: 'text' },
        String(completion.text ?? ''),
        completion.episode ? renderEpisode(completion.episode) : null,
      ),
      scoreCell(completion.reward),
      ...rewardNames.map((name) => scoreCell(completion.rewards?.[name])),
      element('td', { className: advantageClass }, formatNumber(typeof advantage === 'number' ? advantage : null)),
      element('td', {}, completion.length ?? '–'),
      element('td', {}, completion.finishReason ?? '–'),
    );
  });
  return element(
    'div',
    { className: 'group' },
    element(
      'div',
      {},
      element('b', {}, `Group ${index + 1}`),
      group.answer === undefined ? null : ` · expected answer: ${String(group.answer)}`,
    ),
    // A vision-language sample's images (PNG files in the run folder) beside its prompt.
    ...(Array.isArray(group.images) ? group.images : []).map((path) =>
      element('img', {
        className: 'sample-image',
        src: `${runPath(state.selectedId)}/images/${encodeURIComponent(String(path).split('/').pop())}`,
        alt: 'the prompt image',
      }),
    ),
    element(
      'div',
      { className: 'prompt' },
      typeof group.prompt === 'string' ? group.prompt : JSON.stringify(group.prompt),
    ),
    element('table', { className: 'completions' }, element('thead', {}, header), element('tbody', {}, ...rows)),
  );
}

async function openSampleStep(phase, step) {
  const generation = state.generation;
  state.selectedStep = `${phase}/${step}`;
  renderSampleSteps();
  const query = `step=${encodeURIComponent(step)}&phase=${encodeURIComponent(phase)}`;
  try {
    const answer = await fetchJson(`${runPath(state.selectedId)}/samples?${query}`);
    if (generation !== state.generation) return;
    byId('sample-groups').replaceChildren(...answer.groups.map(renderGroup));
  } catch (error) {
    byId('sample-groups').replaceChildren(element('span', { className: 'empty' }, error.message));
  }
}

/** Fetch what is new for the selected run: metric lines since the last poll, sample steps, header. */
async function refreshSelectedRun() {
  const id = state.selectedId;
  const generation = state.generation;
  const fromLine = state.nextLine;
  const [run, metrics, samples, images] = await Promise.all([
    fetchJson(runPath(id)),
    fetchJson(`${runPath(id)}/metrics?fromLine=${fromLine}`).catch((error) => ({
      rows: [],
      nextLine: fromLine,
      problems: [error.message],
    })),
    fetchJson(`${runPath(id)}/samples`).catch(() => ({ steps: [], problems: [] })),
    fetchJson(`${runPath(id)}/images`).catch(() => ({ images: [] })),
  ]);
  if (generation !== state.generation) return null;
  // Two refreshes can overlap (the timer and a selection); only the first answer for a given
  // starting line may append, or its rows would be drawn twice.
  if (fromLine !== state.nextLine) return run;
  state.rows.push(...metrics.rows);
  state.nextLine = metrics.nextLine;
  state.problems = [...metrics.problems, ...samples.problems];
  const stepsChanged = samples.steps.length !== state.sampleSteps.length;
  state.sampleSteps = samples.steps;
  renderRunHeader(run, run.checkpoints);
  renderProblems();
  if (metrics.rows.length > 0 || state.lastUpdate === null) renderCharts();
  if (stepsChanged) renderSampleSteps();
  if (images.images.length !== state.images.length) {
    state.images = images.images;
    renderImages();
  }
  state.lastUpdate = new Date();
  return run;
}

async function selectRun(id) {
  state.generation += 1;
  Object.assign(state, {
    selectedId: id,
    rows: [],
    nextLine: 1,
    problems: [],
    sampleSteps: [],
    selectedStep: null,
    images: [],
    lastUpdate: null,
  });
  renderImages();
  history.replaceState(null, '', `#run=${encodeURIComponent(id)}`);
  renderRuns();
  renderSampleSteps();
  byId('sample-groups').replaceChildren(
    element('span', { className: 'empty' }, 'Pick a step to see its prompt groups.'),
  );
  const generation = state.generation;
  fetchJson(`${runPath(id)}/config`)
    .then((config) => {
      if (generation === state.generation) byId('config').textContent = JSON.stringify(config, null, 2);
    })
    .catch((error) => {
      if (generation === state.generation) byId('config').textContent = error.message;
    });
  await refreshSelectedRun().catch(showError);
}

function showError(error) {
  byId('problems').textContent = error.message;
}

let polling = false;

async function poll() {
  if (polling) return; // the previous poll is still waiting for the server
  polling = true;
  try {
    state.runs = (await fetchJson('api/runs')).runs;
    renderRuns();
    const selected = state.runs.find((run) => run.id === state.selectedId);
    const live = selected !== undefined && !finishedStatuses.has(selected.status);
    // A run that just finished still gets one last fetch so its final lines are drawn.
    if (live || (selected !== undefined && byId('live').dataset.live === 'true')) await refreshSelectedRun();
    byId('live').dataset.live = String(live);
    byId('live').textContent = live
      ? `live · refreshing every ${pollMilliseconds / 1000} s · updated ${state.lastUpdate?.toLocaleTimeString() ?? ''}`
      : '';
  } catch (error) {
    showError(error);
  } finally {
    polling = false;
  }
}

async function start() {
  try {
    state.runs = (await fetchJson('api/runs')).runs;
  } catch (error) {
    showError(error);
  }
  renderRuns();
  const wanted = new URLSearchParams(location.hash.slice(1)).get('run');
  const first = state.runs.find((run) => run.id === wanted) ?? state.runs[0];
  if (first !== undefined) await selectRun(first.id);
  setInterval(poll, pollMilliseconds);
  await poll();
}

start();
