/**
 * The page's Web Worker: trains the addition run (browser-run.ts) off the page's thread and posts
 * each event to the page. Messages in: `start` with the settings, `pause`, `resume`. Out: the run's
 * events, `paused`, and `error` with the sentence that stopped the run.
 *
 * Is not: the page (web/page.js draws the curves) nor a server; it runs only in a browser.
 */
import { setBackend } from '../tensor/backends/select.js';
import { browserRun, type BrowserRunSettings } from './browser-run.js';

/** What this file uses of a dedicated worker's global scope (the lib has no WebWorker types here). */
interface WorkerScope {
  postMessage(message: unknown): void;
  onmessage: ((event: { data: { type: string; settings?: BrowserRunSettings; backend?: string } }) => void) | null;
}
const scope = globalThis as unknown as WorkerScope;

let paused = false;
let wake: (() => void) | null = null;
let running = false;

scope.onmessage = ({ data }) => {
  if (data.type === 'pause') paused = true;
  if (data.type === 'resume') {
    paused = false;
    wake?.();
    wake = null;
  }
  if (data.type === 'start' && !running && data.settings) {
    running = true;
    train(data.settings, data.backend ?? 'js').catch((error: unknown) =>
      scope.postMessage({ kind: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  }
};

async function train(settings: BrowserRunSettings, backend: string): Promise<void> {
  const chosen = setBackend(backend, { threads: 1 });
  scope.postMessage({ kind: 'backend', name: chosen.name, threads: chosen.threads });
  for await (const event of browserRun(settings)) {
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
