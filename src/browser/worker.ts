/**
 * The page's Web Worker: trains the addition run (browser-run.ts) or a model picked from disk with a
 * typed reward (model-run.ts, the reward in its own worker: typed-reward.ts) off the page's thread and
 * posts each event to the page. Messages in: `start` with the settings, `start-model` with the
 * settings, the picked files' bytes and the reward's text and time limit, `pause`, `resume`, `save` (with `as`:
 * `zip`, the default, or `files`). Out: the run's events, `backend` (the backend it trains on, and why not wasm
 * when wasm did not load), `paused`, `checkpoint` (a zip of the model's folder) or `checkpoint-files` (its
 * files, for the page to write into a folder the user picked), and `error` with the sentence that stopped the run.
 *
 * Is not: the page (web/page.js draws the curves) nor a server; it runs only in a browser.
 */
import type { Backend } from '../tensor/backend.js';
import { setBackend } from '../tensor/backends/select.js';
import { createJsBackend } from '../tensor/backends/js.js';
import { browserRun, type BrowserRunEvent, type BrowserRunSettings } from './browser-run.js';
import { modelRun, type ModelRunSettings } from './model-run.js';
import { startTypedReward, type RewardThread } from './typed-reward.js';
import { createPageWasmBackend, pageWasmThreads } from './wasm-backend.js';
import { createPageWebGpuBackend } from './webgpu-bridge.js';
import { storeZip } from './zip.js';

/** What this file uses of a dedicated worker's global scope (the lib has no WebWorker types here). */
interface WorkerScope {
  postMessage(message: unknown, transfer?: ArrayBuffer[]): void;
  onmessage: ((event: { data: WorkerRequest }) => void) | null;
}

interface WorkerRequest {
  type: string;
  /** How `save` hands the model over: one zip (a download), or its files (a picked folder). */
  as?: 'zip' | 'files';
  settings?: BrowserRunSettings;
  backend?: string;
  modelSettings?: ModelRunSettings;
  /** The picked files: name → bytes. */
  files?: Record<string, ArrayBuffer>;
  reward?: { source: string; timeoutMs: number };
}
const scope = globalThis as unknown as WorkerScope;

let paused = false;
let wake: (() => void) | null = null;
let running = false;
let checkpoint: (() => Map<string, Uint8Array>) | null = null;
let lastStep = 0;
let runName = 'grpo-addition';

scope.onmessage = ({ data }) => {
  if (data.type === 'pause') paused = true;
  if (data.type === 'resume') {
    paused = false;
    wake?.();
    wake = null;
  }
  // Messages are handled between steps (train() yields to the event loop after each), so the
  // weights are those after the last finished step.
  if (data.type === 'save') save(data.as ?? 'zip');
  const fail = (error: unknown) =>
    scope.postMessage({ kind: 'error', message: error instanceof Error ? error.message : String(error) });
  if (data.type === 'start' && !running && data.settings) {
    running = true;
    const settings = data.settings;
    train(data.backend ?? 'js', () => browserRun(settings, (files) => (checkpoint = files))).catch(fail);
  }
  if (data.type === 'start-model' && !running && data.modelSettings && data.files && data.reward) {
    running = true;
    runName = 'grpo-model';
    trainPickedModel(data.modelSettings, data.files, data.reward, data.backend ?? 'js').catch(fail);
  }
};

/** Compiles the typed reward first (its errors come before any loading), then trains the picked model with it. */
async function trainPickedModel(
  settings: ModelRunSettings,
  files: Record<string, ArrayBuffer>,
  reward: { source: string; timeoutMs: number },
  backend: string,
): Promise<void> {
  const spawn = () =>
    new Worker(new URL('reward-worker.js', globalThis.location.href), { type: 'module' }) as unknown as RewardThread;
  const typed = await startTypedReward(reward.source, reward.timeoutMs, spawn);
  const bytes = new Map(Object.entries(files).map(([name, buffer]) => [name, new Uint8Array(buffer)]));
  try {
    await train(backend, () => modelRun(settings, bytes, typed.score, (files) => (checkpoint = files)));
  } finally {
    typed.close();
  }
}

/**
 * The backend named in the page: wasm when it loads (its threads must be running before the first
 * product, and they start only while this worker's event loop turns), else js with the reason; webgpu
 * when the browser opens an adapter, with wasm's (else js's) row kernels for the work in host memory,
 * else that CPU backend with the reason.
 */
async function chooseBackend(name: string): Promise<{ backend: Backend; note?: string }> {
  if (name !== 'wasm' && name !== 'webgpu') return { backend: setBackend(name, { threads: 1 }) };
  const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
  let cpu: { backend: Backend; note?: string };
  try {
    cpu = { backend: await createPageWasmBackend(pageWasmThreads()) };
  } catch (error) {
    cpu = { backend: createJsBackend(), note: `wasm did not load (${reasonOf(error)}); training on js` };
  }
  if (name === 'wasm') return { backend: setBackend(cpu.backend), note: cpu.note };
  try {
    return { backend: setBackend(await createPageWebGpuBackend(cpu.backend)) };
  } catch (error) {
    const note = `webgpu did not open (${reasonOf(error)}); training on ${cpu.backend.name}`;
    return { backend: setBackend(cpu.backend), note };
  }
}

async function train(backend: string, run: () => AsyncGenerator<BrowserRunEvent>): Promise<void> {
  const { backend: chosen, note } = await chooseBackend(backend);
  scope.postMessage({ kind: 'backend', name: chosen.name, threads: chosen.threads, detail: chosen.detail, note });
  for await (const event of run()) {
    if (event.kind === 'step') lastStep = event.step;
    scope.postMessage(event);
    // A macrotask between steps, so a pause posted during a step is received before the next one.
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (paused) {
      scope.postMessage({ kind: 'paused' });
      await new Promise<void>((resolve) => (wake = resolve));
      scope.postMessage({ kind: 'resumed' });
    }
  }
}

/** Posts the model after the last finished step: a zip of its Hugging Face folder, or the folder's files. */
function save(as: 'zip' | 'files'): void {
  if (!checkpoint) return scope.postMessage({ kind: 'error', message: 'nothing to save: start a run first' });
  const folder = `${runName}-step-${lastStep}`;
  if (as === 'files') {
    const files = [...checkpoint()];
    return scope.postMessage(
      { kind: 'checkpoint-files', folder, step: lastStep, files },
      files.map(([, bytes]) => bytes.buffer as ArrayBuffer),
    );
  }
  const files = new Map([...checkpoint()].map(([name, bytes]) => [`${folder}/${name}`, bytes]));
  const zip = storeZip(files, new Date());
  scope.postMessage({ kind: 'checkpoint', name: `${folder}.zip`, step: lastStep, bytes: zip }, [
    zip.buffer as ArrayBuffer,
  ]);
}
