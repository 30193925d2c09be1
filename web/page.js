// The page of `grpo web`: starts the training worker (worker.js) on the addition task or on model
// files picked from disk with a typed reward, draws its events as SVG curves and a table of the
// latest group's completions, pauses or resumes it, and downloads the checkpoint it zips on request.
// Plain browser JavaScript.
const form = document.querySelector('#settings');
const modelForm = document.querySelector('#model-form');
const pauseButton = document.querySelector('#pause');
const saveButton = document.querySelector('#save');
const saveFolderButton = document.querySelector('#save-folder');
const statusLine = document.querySelector('#status');
const errorLine = document.querySelector('#error');
const rewards = []; // [step, reward/mean]
const accuracies = []; // [step, accuracy]
const state = {
  backend: '',
  sftSeconds: 0,
  sftSteps: 0,
  grpoSeconds: 0,
  grpoSteps: 0,
  last: null,
  paused: false,
  saved: '',
};
let worker = null;

const setState = (name) => (document.body.dataset.state = name);
const svgNamespace = 'http://www.w3.org/2000/svg';

/**
 * Draws `points` ([x, y] pairs) as a line with dots in `svg`, y from 0 to `yMax`, with a few labels.
 * x starts at step 0, or with `fromFirst` at the first point: the reward chart has GRPO steps only,
 * which would otherwise crowd at the right edge after hundreds of SFT steps.
 */
function drawChart(svg, points, yMax, { fromFirst = false } = {}) {
  const width = Number(svg.getAttribute('width'));
  const height = Number(svg.getAttribute('height'));
  const pad = 32;
  svg.replaceChildren();
  const xs = points.map(([x]) => x);
  const xMin = fromFirst && xs.length > 0 ? Math.min(...xs) : Math.min(...xs, 0);
  const xMax = Math.max(...xs, xMin + 1);
  const sx = (x) => pad + ((x - xMin) / Math.max(1e-9, xMax - xMin)) * (width - 2 * pad);
  const sy = (y) => height - pad - (Math.max(0, Math.min(yMax, y)) / yMax) * (height - 2 * pad);
  const add = (name, attributes, text) => {
    const element = document.createElementNS(svgNamespace, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
    if (text !== undefined) element.textContent = text;
    svg.append(element);
    return element;
  };
  add('line', { x1: pad, y1: sy(0), x2: width - pad, y2: sy(0), stroke: '#999' });
  add('line', { x1: pad, y1: sy(0), x2: pad, y2: sy(yMax), stroke: '#999' });
  add('text', { x: 2, y: sy(yMax) + 4, 'font-size': 10 }, yMax.toFixed(1));
  add('text', { x: 2, y: sy(0) + 4, 'font-size': 10 }, '0');
  add('text', { x: width - pad - 30, y: height - 8, 'font-size': 10 }, `step ${xMax}`);
  if (xMin !== 0) add('text', { x: pad, y: height - 8, 'font-size': 10 }, `step ${xMin}`);
  if (points.length === 0) return;
  const d = points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
  add('path', { d, fill: 'none', stroke: '#1565c0', 'stroke-width': 1.5, class: 'series' });
  for (const [x, y] of points) add('circle', { cx: sx(x), cy: sy(y), r: 2.5, fill: '#1565c0' });
}

function showGroup(record) {
  const answer = record.answer ? ` → answer ${record.answer}` : '';
  document.querySelector('#prompt').textContent = `prompt ${JSON.stringify(record.prompt)}${answer}`;
  const rows = record.completions.map((completion) => {
    const row = document.createElement('tr');
    for (const value of [
      JSON.stringify(completion.text),
      completion.reward === null ? 'failed' : completion.reward.toFixed(2),
      completion.advantage.toFixed(3),
      completion.inLoss ? 'yes' : 'no',
    ]) {
      const cell = document.createElement('td');
      cell.textContent = value;
      row.append(cell);
    }
    return row;
  });
  document.querySelector('#completions tbody').replaceChildren(...rows);
}

function showStatus() {
  const lines = [`backend ${state.backend}; cross-origin isolated: ${self.crossOriginIsolated ? 'yes' : 'no'}`];
  if (state.last) {
    const { phase, step, seconds, tokensPerSecond } = state.last;
    lines.push(`${phase} step ${step}: ${(seconds * 1000).toFixed(0)} ms, ${tokensPerSecond.toFixed(0)} tokens/s`);
  }
  if (state.sftSteps > 0) lines.push(`SFT: ${(state.sftSteps / state.sftSeconds).toFixed(2)} steps/s`);
  if (state.grpoSteps > 0) lines.push(`GRPO: ${(state.grpoSteps / state.grpoSeconds).toFixed(2)} steps/s`);
  const accuracy = accuracies.map(([step, value]) => `${(value * 100).toFixed(1)}% @${step}`).join(', ');
  if (accuracy) lines.push(`held-out accuracy: ${accuracy}`);
  if (state.saved) lines.push(state.saved);
  statusLine.textContent = lines.join('\n');
}

function onEvent(event) {
  if (event.kind === 'backend') {
    const detail = event.detail ? `, ${event.detail}` : ''; // a GPU backend's adapter
    state.backend = `${event.name} (${event.threads} thread${event.threads === 1 ? '' : 's'}${detail})`;
    if (event.note) state.backend += `: ${event.note}`;
  }
  if (event.kind === 'step') {
    state.last = event;
    if (event.phase === 'sft')
      [state.sftSteps, state.sftSeconds] = [state.sftSteps + 1, state.sftSeconds + event.seconds];
    else {
      [state.grpoSteps, state.grpoSeconds] = [state.grpoSteps + 1, state.grpoSeconds + event.seconds];
      rewards.push([event.step, event.metrics['reward/mean']]);
      const rewardMax = Math.max(1.2, ...rewards.map(([, y]) => y));
      drawChart(document.querySelector('#reward-chart'), rewards, rewardMax, { fromFirst: true });
      if (event.samples?.[0]) showGroup(event.samples[0]);
    }
  }
  if (event.kind === 'evaluation') {
    accuracies.push([event.step, event.accuracy]);
    const item = document.createElement('span');
    Object.assign(item.dataset, { phase: event.phase, step: event.step, accuracy: event.accuracy });
    item.className = 'evaluation';
    document.body.append(item);
    drawChart(document.querySelector('#accuracy-chart'), accuracies, 1);
  }
  if (event.kind === 'paused') setState('paused');
  if (event.kind === 'resumed') setState('running');
  if (event.kind === 'done') {
    setState('done');
    pauseButton.disabled = true;
  }
  if (event.kind === 'checkpoint') download(event);
  if (event.kind === 'checkpoint-files')
    writeFolder(event).catch((error) => onEvent({ kind: 'error', message: error.message }));
  if (event.kind === 'error') {
    errorLine.textContent = event.message;
    setState('error');
    pauseButton.disabled = true;
  }
  showStatus();
}

form.addEventListener('submit', (submitted) => {
  submitted.preventDefault();
  if (worker) return;
  const values = new FormData(form);
  const number = (name) => Number(values.get(name));
  const settings = {
    seed: number('seed'),
    sftSteps: number('sftSteps'),
    grpoSteps: number('grpoSteps'),
    evalExamples: number('evalExamples'),
    evaluateEvery: number('evaluateEvery'),
    hiddenSize: number('hiddenSize'),
    sftBatchSize: number('sftBatchSize'),
    sftLearningRate: number('sftLearningRate'),
    grpoLearningRate: number('grpoLearningRate'),
    promptsPerStep: number('promptsPerStep'),
  };
  startWorker({ type: 'start', settings, backend: values.get('backend') });
});

/** Starts the training worker with its first message (whose ArrayBuffers in `transfer` move to it). */
function startWorker(message, transfer = []) {
  worker = new Worker('worker.js', { type: 'module' });
  worker.onmessage = ({ data }) => onEvent(data);
  worker.onerror = (error) => onEvent({ kind: 'error', message: error.message || 'the worker failed to load' });
  worker.postMessage(message, transfer);
  form.querySelector('#start').disabled = true;
  modelForm.querySelector('#start-model').disabled = true;
  pauseButton.disabled = false;
  saveButton.disabled = false;
  saveFolderButton.disabled = false;
  setState('running');
}

/**
 * GRPO on the picked model files with the typed reward: the files are read here and handed to the
 * worker by name (a folder's files, without the folder), which checks them and compiles the reward
 * before any step.
 */
modelForm.addEventListener('submit', async (submitted) => {
  submitted.preventDefault();
  if (worker) return;
  const values = new FormData(modelForm);
  const picked = [...modelForm.querySelector('#model-files').files];
  if (picked.length === 0) {
    errorLine.textContent =
      "pick the model's files first: config.json, model.safetensors, tokenizer.json and tokenizer_config.json";
    return;
  }
  errorLine.textContent = '';
  const files = Object.fromEntries(
    await Promise.all(picked.map(async (file) => [file.name, await file.arrayBuffer()])),
  );
  const number = (name) => Number(values.get(name));
  const modelSettings = {
    seed: number('seed'),
    grpoSteps: number('grpoSteps'),
    promptsPerStep: number('promptsPerStep'),
    learningRate: number('learningRate'),
    maxNewTokens: number('maxNewTokens'),
    prompts: String(values.get('prompts'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== ''),
  };
  const reward = { source: String(values.get('reward')), timeoutMs: number('rewardTimeoutMs') };
  const backend = form.elements.namedItem('backend').value;
  startWorker({ type: 'start-model', modelSettings, files, reward, backend }, Object.values(files));
});

pauseButton.addEventListener('click', () => {
  state.paused = !state.paused;
  worker.postMessage({ type: state.paused ? 'pause' : 'resume' });
  pauseButton.textContent = state.paused ? 'Resume' : 'Pause';
});

/** Hands the worker's zip of the model folder to the browser as a download. */
function download({ name, step, bytes }) {
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/zip' }));
  const link = Object.assign(document.createElement('a'), { href: url, download: name });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  state.saved = `saved ${name} (the model after step ${step}, ${(bytes.length / 1024).toFixed(0)} KiB)`;
}

saveButton.addEventListener('click', () => worker?.postMessage({ type: 'save' }));

/** The folder the user picked for "Save to a folder", until the worker's files arrive. */
let pickedFolder = null;

// The File System Access API (Chromium-based browsers): the picker must open in the click itself,
// so the folder is picked first and the worker asked for the files after.
if (typeof window.showDirectoryPicker === 'function') saveFolderButton.hidden = false;
saveFolderButton.addEventListener('click', async () => {
  try {
    pickedFolder = await window.showDirectoryPicker({ id: 'grpo-checkpoints', mode: 'readwrite' });
  } catch (error) {
    if (error.name === 'AbortError') return; // the user closed the picker
    throw error;
  }
  worker?.postMessage({ type: 'save', as: 'files' });
});

/** Writes the worker's checkpoint files into a new folder inside the picked one (the run folder's layout). */
async function writeFolder({ folder, step, files }) {
  const target = await pickedFolder.getDirectoryHandle(folder, { create: true });
  for (const [name, bytes] of files) {
    const writable = await (await target.getFileHandle(name, { create: true })).createWritable();
    await writable.write(bytes);
    await writable.close();
  }
  const total = files.reduce((sum, [, bytes]) => sum + bytes.length, 0);
  state.saved = `saved ${pickedFolder.name}/${folder}/ (the model after step ${step}, ${files.length} files, ${(total / 1024).toFixed(0)} KiB)`;
  showStatus();
}

/**
 * `?preset=quick`: a smaller run where GRPO itself lifts the held-out accuracy within about a minute
 * on the js backend (seed 0: 42.5% after SFT → 51% after GRPO on 200 held-out sums; docs/browser.md).
 * `npm start`'s settings are the fields' defaults.
 */
const presets = {
  quick: {
    seed: 0,
    sftSteps: 600,
    grpoSteps: 15,
    evalExamples: 200,
    evaluateEvery: 5,
    hiddenSize: 48,
    sftBatchSize: 32,
    sftLearningRate: 0.003,
    grpoLearningRate: 0.0001,
    promptsPerStep: 16,
  },
};

/** Fills the form from the address: `preset=<name>` first, then any `<field>=<value>`. */
function applyQuery() {
  const query = new URLSearchParams(location.search);
  const preset = query.get('preset');
  const values = { ...(preset === null ? {} : presets[preset]) };
  if (preset !== null && !presets[preset])
    errorLine.textContent = `unknown preset "${preset}" (known: ${Object.keys(presets).join(', ')})`;
  for (const [name, value] of query) if (name !== 'preset') values[name] = value;
  for (const [name, value] of Object.entries(values)) {
    const field = form.elements.namedItem(name);
    if (!field) errorLine.textContent = `unknown setting "${name}" in the address`;
    else if (field.tagName === 'SELECT' && ![...field.options].some((option) => option.value === value))
      errorLine.textContent = `${name} "${value}" is not available in a browser tab (the native backend is a Node addon); choose ${[...field.options].map((option) => option.value).join(' or ')}`;
    else field.value = String(value);
  }
}

applyQuery();
drawChart(document.querySelector('#reward-chart'), [], 1.2);
drawChart(document.querySelector('#accuracy-chart'), [], 1);
