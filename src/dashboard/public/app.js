/*
 * The dashboard page's logic: fetch the runs list and a run's metrics and samples from the JSON
 * API, draw the curves (series.js picks them, chart.js draws them) with optional smoothing and a
 * log y axis, overlay the curves of other runs ticked for comparing, show the image grids of flow
 * runs by step, browse samples by step (paged; samples.js draws a step's groups), and poll while a
 * run is going.
 * It never writes anything (the API is read-only) and never puts file content into innerHTML:
 * completions are model output, so every text goes through textContent.
 * Query parameter `poll=<ms>` changes the refresh interval (tests use a short one); the hash holds
 * the view (`#run=ID&compare=ID,ID&smoothing=0.6&log=1`), so a reload or a shared link keeps it.
 */
import { formatNumber, palette, renderLineChart } from './chart.js';
import { element } from './dom.js';
import { renderGroup } from './samples.js';
import { chartDefinitions, chartSeries, placeRuns } from './series.js';

const pollMilliseconds = Math.max(200, Number(new URLSearchParams(location.search).get('poll')) || 3000);
// A run's first metrics fetch asks the server to thin a long file to about this many rows (`maxRows=` in
// the page's query changes it): a 200 MB metrics.jsonl would otherwise be sent and drawn point by point.
const firstFetchRows = Math.min(
  100000,
  Math.max(100, Number(new URLSearchParams(location.search).get('maxRows')) || 4000),
);
// Runs that no longer write: the page stops polling their metrics (an interrupted run polls again once resumed).
const finishedStatuses = new Set(['finished', 'failed', 'interrupted']);

/** Sample steps per page of step buttons: a 200-step run would otherwise be one block of 200 buttons. */
const stepsPerPage = 20;

const state = {
  runs: [],
  selectedId: null,
  /** Other runs whose curves are overlaid on the selected run's, in the order they were ticked. */
  compareIds: [],
  /** Bumped on every run switch so answers for the previous run are dropped. */
  generation: 0,
  /** Per shown run (the selected one and the compared ones): { rows, nextLine, problems, missing }. */
  metrics: new Map(),
  sampleSteps: [],
  /** samples.jsonl lines that could not be read. */
  sampleProblems: [],
  selectedStep: null,
  /** Which page of step buttons is shown. */
  stepPage: 0,
  /** The run's image grids ({ name, step }), shown when a flow run wrote any. */
  images: [],
  lastUpdate: null,
  /** TensorBoard-style EMA weight, 0 (off) … 0.99. */
  smoothing: 0,
  logScale: false,
};

const byId = (id) => document.getElementById(id);

async function fetchJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) {
    const error = new Error(`${path}: ${body.error ?? response.status}`);
    // Callers tell "this file does not exist" (404, often expected) from real failures by the status.
    error.status = response.status;
    throw error;
  }
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
      const selected = run.id === state.selectedId;
      // The selected run is always drawn, so its box is ticked and fixed; the others add or remove an overlay.
      const compare = element(
        'label',
        {
          className: 'compare',
          title: selected ? 'the selected run is always drawn' : "overlay this run's curves on the charts",
          onclick: (event) => event.stopPropagation(),
        },
        element('input', {
          type: 'checkbox',
          checked: selected || state.compareIds.includes(run.id),
          disabled: selected,
          dataset: { compare: run.id },
          onchange: (event) => toggleCompare(run.id, event.target.checked),
        }),
        ' compare',
      );
      return element(
        'li',
        {
          className: selected ? 'selected' : '',
          dataset: { run: run.id },
          onclick: () => selectRun(run.id),
        },
        element('div', { className: 'id' }, run.id),
        statusBadge(run.status, run.reason),
        ' ',
        element('span', { className: 'facts' }, facts),
        compare,
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
  // Through element(), which drops null children: replaceChildren itself would print a null as the text "null".
  const header = element(
    'div',
    {},
    element('span', { className: 'title' }, run.id),
    statusBadge(run.status, run.reason),
    run.reason ? element('span', { className: 'fact reason' }, run.reason) : null,
    // A flow run's metrics have no phase: its step stands alone rather than as "null 2".
    fact('step', run.lastStep === null ? '–' : [run.phase, run.lastStep].filter((part) => part !== null).join(' ')),
    fact('eval before', evalText(run.evalBefore)),
    fact('eval after', evalText(run.evalAfter)),
    fact('checkpoints', checkpoints.length === 0 ? 'none' : checkpoints.join(', ')),
    fact('updated', run.updatedAt ? new Date(run.updatedAt).toLocaleString() : '–'),
  );
  byId('run-header').replaceChildren(...header.childNodes);
}

/** The runs whose curves are drawn: the selected one first, then the compared ones that have metrics state. */
function shownRunIds() {
  return [state.selectedId, ...state.compareIds].filter((id) => id !== null && state.metrics.has(id));
}

/**
 * Why a run has no curves, as a sentence: a failed run that never wrote metrics.jsonl says so and
 * gives summary.json's reason, rather than the raw 404 of the metrics request.
 */
function missingMetricsText(id) {
  const run = state.runs.find((entry) => entry.id === id);
  const reason = run?.reason ? ` Reason from summary.json: ${run.reason}` : ' summary.json gives no reason.';
  if (run?.status === 'failed')
    return `No curves: this run failed before it wrote any metrics (its folder has no metrics.jsonl).${reason}`;
  if (run?.status === 'interrupted')
    return `No curves: this run stopped before it wrote any metrics (its folder has no metrics.jsonl).${reason}`;
  return 'No curves yet: the run has not written metrics.jsonl (its first line comes after the first step).';
}

function renderCharts() {
  const ids = shownRunIds();
  const { placed, phases } = placeRuns(ids.map((id) => state.metrics.get(id).rows));
  const container = byId('charts');
  const phaseAt = (x) => [...phases].reverse().find((entry) => x > entry.offset);
  const describeX = (x) => `${phaseAt(x)?.label ?? ''} step ${x - (phaseAt(x)?.offset ?? 0)}`;
  // Ticks show the step within its phase, as the metrics file counts it.
  const formatX = (x) => formatNumber(x - (phaseAt(x)?.offset ?? 0));
  const charts = [];
  for (const definition of chartDefinitions) {
    const series = chartSeries(definition, placed, ids);
    if (series.length === 0) continue;
    const section = element('section');
    renderLineChart(section, {
      id: definition.id,
      title: definition.title,
      series,
      phases: phases.length > 1 ? phases : [],
      describeX,
      formatX,
      smoothing: state.smoothing,
      logScale: state.logScale,
    });
    charts.push(section);
  }
  container.replaceChildren(...charts);
  const selected = state.metrics.get(state.selectedId);
  if (charts.length === 0 && selected !== undefined) {
    const text = selected.missing ? missingMetricsText(state.selectedId) : 'No metrics logged yet.';
    container.append(element('div', { className: 'panel empty no-metrics' }, text));
  }
  renderCompareLegend(ids);
}

/** Which colour is which run, above the charts, while runs are compared; a compared run without metrics says so. */
function renderCompareLegend(ids) {
  const legend = byId('compare-legend');
  if (state.compareIds.length === 0) {
    legend.replaceChildren();
    return;
  }
  legend.replaceChildren(
    'comparing: ',
    ...ids.map((id, r) =>
      element(
        'span',
        { className: 'item', dataset: { run: id } },
        element('span', { className: 'swatch', style: `border-top-color: ${palette[r % palette.length]}` }),
        id,
      ),
    ),
    ...state.compareIds
      .filter((id) => state.metrics.get(id)?.missing)
      .map((id) => element('span', { className: 'empty' }, `${id}: no metrics.jsonl`)),
  );
}

function renderProblems() {
  const problems = shownRunIds().flatMap((id) => {
    const entry = state.metrics.get(id);
    const lines = entry.note ? [entry.note, ...entry.problems] : entry.problems;
    return id === state.selectedId ? lines : lines.map((problem) => `${id}: ${problem}`);
  });
  byId('problems').textContent = [...problems, ...state.sampleProblems].slice(0, 8).join('\n');
}

const stepKey = (entry) => `${entry.phase}/${entry.step}`;

/**
 * The step picker: one page of step buttons and, when there is more than one page, previous /
 * next page buttons and a select listing every step (jump straight to one).
 */
function renderSampleSteps() {
  const steps = byId('sample-steps');
  const count = state.sampleSteps.length;
  if (count === 0) {
    steps.replaceChildren(element('span', { className: 'empty' }, 'No samples logged yet.'));
    return;
  }
  const pages = Math.ceil(count / stepsPerPage);
  state.stepPage = Math.min(Math.max(state.stepPage, 0), pages - 1);
  const first = state.stepPage * stepsPerPage;
  const buttons = state.sampleSteps.slice(first, first + stepsPerPage).map((entry) =>
    element(
      'button',
      {
        className: state.selectedStep === stepKey(entry) ? 'selected' : '',
        dataset: { step: String(entry.step), phase: entry.phase },
        title: `${entry.groups} prompt group(s)`,
        onclick: () => openSampleStep(entry.phase, entry.step),
      },
      `${entry.phase} ${entry.step}`,
    ),
  );
  const turnPage = (by) => {
    state.stepPage += by;
    renderSampleSteps();
  };
  const label = (entry) => `${entry.phase} ${entry.step}`;
  const navigation =
    pages === 1
      ? null
      : element(
          'div',
          { className: 'step-navigation' },
          element(
            'button',
            { className: 'page-previous', disabled: state.stepPage === 0, onclick: () => turnPage(-1) },
            '‹ earlier',
          ),
          element(
            'span',
            { className: 'page-label' },
            `${label(state.sampleSteps[first])} – ${label(state.sampleSteps[Math.min(first + stepsPerPage, count) - 1])}`,
            ` (page ${state.stepPage + 1} of ${pages}, ${count} steps)`,
          ),
          element(
            'button',
            { className: 'page-next', disabled: state.stepPage === pages - 1, onclick: () => turnPage(1) },
            'later ›',
          ),
          element(
            'select',
            {
              id: 'step-picker',
              title: 'open any logged step',
              onchange: (event) => {
                const entry = state.sampleSteps.find((candidate) => stepKey(candidate) === event.target.value);
                if (entry !== undefined) openSampleStep(entry.phase, entry.step);
              },
            },
            element('option', { value: '', selected: state.selectedStep === null }, 'go to step…'),
            ...state.sampleSteps.map((entry) =>
              element(
                'option',
                { value: stepKey(entry), selected: state.selectedStep === stepKey(entry) },
                label(entry),
              ),
            ),
          ),
        );
  steps.replaceChildren(
    ...[navigation, element('div', { className: 'step-buttons' }, ...buttons)].filter((node) => node !== null),
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

async function openSampleStep(phase, step) {
  const generation = state.generation;
  state.selectedStep = `${phase}/${step}`;
  // Show the page holding the step, so its button is visible and marked.
  const index = state.sampleSteps.findIndex((entry) => stepKey(entry) === state.selectedStep);
  if (index >= 0) state.stepPage = Math.floor(index / stepsPerPage);
  renderSampleSteps();
  const query = `step=${encodeURIComponent(step)}&phase=${encodeURIComponent(phase)}`;
  try {
    const answer = await fetchJson(`${runPath(state.selectedId)}/samples?${query}`);
    if (generation !== state.generation) return;
    const imageUrl = (name) => `${runPath(state.selectedId)}/images/${encodeURIComponent(name)}`;
    byId('sample-groups').replaceChildren(...answer.groups.map((group, index) => renderGroup(group, index, imageUrl)));
  } catch (error) {
    byId('sample-groups').replaceChildren(element('span', { className: 'empty' }, error.message));
  }
}

/**
 * Append the metric lines `id` wrote since the last fetch; true when there were any. A 404 is no
 * problem but a fact (no metrics.jsonl yet, or ever: a run that failed first), kept as `missing`.
 */
async function fetchNewMetrics(id) {
  const entry = state.metrics.get(id);
  const fromLine = entry.nextLine;
  // The runs list says when there is no metrics.jsonl (no update time): asking anyway would only
  // earn a 404, which the browser logs as an error. A later poll's list says when one appears.
  if (state.runs.find((run) => run.id === id)?.updatedAt === null) {
    entry.missing = true;
    return false;
  }
  let answer;
  try {
    const thin = fromLine === 1 ? `&maxRows=${firstFetchRows}` : '';
    answer = await fetchJson(`${runPath(id)}/metrics?fromLine=${fromLine}${thin}`);
  } catch (error) {
    if (state.metrics.get(id) !== entry) return false;
    entry.missing = error.status === 404;
    entry.problems = entry.missing ? [] : [error.message];
    return false;
  }
  // Two fetches can overlap (the timer and a selection); only the first answer for a given
  // starting line may append, or its rows would be drawn twice. A run switched away is dropped too.
  if (state.metrics.get(id) !== entry || fromLine !== entry.nextLine) return false;
  entry.rows.push(...answer.rows);
  entry.nextLine = answer.nextLine;
  // A thinned first answer is said once and stays said: later polls bring only new lines, in full.
  if (answer.sampled)
    entry.note = `showing every ${answer.sampled.every}th of the first ${answer.sampled.of} metric lines (evaluation lines all kept); later lines in full`;
  entry.problems = answer.problems;
  entry.missing = false;
  return answer.rows.length > 0;
}

const emptyMetrics = () => ({ rows: [], nextLine: 1, problems: [], missing: false, note: null });

/** Fetch what is new for the selected run: metric lines since the last poll, sample steps, header. */
async function refreshSelectedRun() {
  const id = state.selectedId;
  const generation = state.generation;
  const [run, newRows, samples, images] = await Promise.all([
    fetchJson(runPath(id)),
    fetchNewMetrics(id),
    fetchJson(`${runPath(id)}/samples`).catch(() => ({ steps: [], problems: [] })),
    fetchJson(`${runPath(id)}/images`).catch(() => ({ images: [] })),
  ]);
  if (generation !== state.generation) return null;
  state.sampleProblems = samples.problems;
  const stepsChanged = samples.steps.length !== state.sampleSteps.length;
  state.sampleSteps = samples.steps;
  renderRunHeader(run, run.checkpoints);
  renderProblems();
  // A run that has no metrics.jsonl is redrawn too: its sentence follows its status (starting → failed).
  if (newRows || state.lastUpdate === null || state.metrics.get(id)?.missing) renderCharts();
  if (stepsChanged) renderSampleSteps();
  if (images.images.length !== state.images.length) {
    state.images = images.images;
    renderImages();
  }
  state.lastUpdate = new Date();
  return run;
}

/** Fetch new lines of the compared runs: all of them the first time, then only those still going. */
async function refreshComparedRuns(firstTime = false) {
  const ids = state.compareIds.filter((id) => {
    const run = state.runs.find((entry) => entry.id === id);
    return firstTime || state.metrics.get(id)?.nextLine === 1 || !finishedStatuses.has(run?.status);
  });
  const changed = await Promise.all(ids.map((id) => fetchNewMetrics(id)));
  if (firstTime || changed.some(Boolean)) {
    renderCharts();
    renderProblems();
  }
}

/** Tick or untick a run for comparing: its curves join or leave every chart. */
async function toggleCompare(id, on) {
  state.compareIds = state.compareIds.filter((entry) => entry !== id);
  state.metrics.delete(id);
  if (on) {
    state.compareIds.push(id);
    state.metrics.set(id, emptyMetrics());
  }
  writeHash();
  renderRuns();
  renderCharts();
  if (on) await fetchNewMetrics(id);
  renderCharts();
  renderProblems();
}

async function selectRun(id) {
  state.generation += 1;
  Object.assign(state, {
    selectedId: id,
    // A run is never compared with itself; the others stay ticked across switches, refetched from line 1.
    compareIds: state.compareIds.filter((entry) => entry !== id),
    metrics: new Map(),
    sampleSteps: [],
    sampleProblems: [],
    selectedStep: null,
    stepPage: 0,
    images: [],
    lastUpdate: null,
  });
  for (const shown of [id, ...state.compareIds]) state.metrics.set(shown, emptyMetrics());
  renderImages();
  writeHash();
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
  await Promise.all([refreshSelectedRun(), refreshComparedRuns(true)]).catch(showError);
}

/** The view in the URL hash: the run, the compared runs, smoothing and log scale. */
function writeHash() {
  const view = new URLSearchParams();
  view.set('run', state.selectedId);
  if (state.compareIds.length > 0) view.set('compare', state.compareIds.join(','));
  if (state.smoothing > 0) view.set('smoothing', String(state.smoothing));
  if (state.logScale) view.set('log', '1');
  history.replaceState(null, '', `#${view}`);
}

/** Smoothing slider and log-scale box: both redraw from the rows already fetched. */
function setUpChartControls() {
  const slider = byId('smoothing');
  const logBox = byId('log-scale');
  slider.value = String(state.smoothing);
  byId('smoothing-value').textContent = state.smoothing.toFixed(2);
  logBox.checked = state.logScale;
  slider.addEventListener('input', () => {
    state.smoothing = Math.min(0.99, Math.max(0, Number(slider.value) || 0));
    byId('smoothing-value').textContent = state.smoothing.toFixed(2);
    writeHash();
    renderCharts();
  });
  logBox.addEventListener('change', () => {
    state.logScale = logBox.checked;
    writeHash();
    renderCharts();
  });
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
    if (state.compareIds.length > 0) await refreshComparedRuns();
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
  const view = new URLSearchParams(location.hash.slice(1));
  state.smoothing = Math.min(0.99, Math.max(0, Number(view.get('smoothing')) || 0));
  state.logScale = view.get('log') === '1';
  const known = new Set(state.runs.map((run) => run.id));
  state.compareIds = (view.get('compare') ?? '').split(',').filter((id) => known.has(id));
  setUpChartControls();
  renderRuns();
  const first = state.runs.find((run) => run.id === view.get('run')) ?? state.runs[0];
  if (first !== undefined) await selectRun(first.id);
  setInterval(poll, pollMilliseconds);
  await poll();
}

start();
