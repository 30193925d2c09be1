/**
 * Parquet decoding in a worker thread with a time limit. `hyparquet` trusts the counts a file
 * states: one damaged byte in a run-length header can ask for 2^31 repeats, and the decoder then
 * spins for minutes on a 700-byte file (found by readers-fuzz.test.ts). In a worker that is
 * stopped when its time is up, such a file fails with its name instead of stalling the run.
 *
 * The limit per call is generous for real data (10 s, plus 1 s per MiB the metadata says the row
 * group holds uncompressed), so only a file that decodes far slower than its size is refused.
 *
 * Is not: the reading of rows or their limits (readers.ts); it only runs hyparquet elsewhere.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** What a Parquet file's footer says, as far as the readers use it. */
export interface ParquetLayout {
  /** Rows and uncompressed bytes of each row group. */
  rowGroups: { rows: number; bytes: number }[];
}

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const loaded = import(workerData.hyparquet);
let opened = null;
async function open(path) {
  const { asyncBufferFromFile, parquetMetadataAsync } = await loaded;
  if (!opened || opened.path !== path) {
    const file = await asyncBufferFromFile(path);
    opened = { path, file, metadata: await parquetMetadataAsync(file) };
  }
  return opened;
}
parentPort.on('message', async ({ id, path, rowStart, rowEnd }) => {
  try {
    const { file, metadata } = await open(path);
    if (rowStart === undefined) {
      const rowGroups = metadata.row_groups.map((group) => ({ rows: Number(group.num_rows), bytes: Number(group.total_byte_size) }));
      parentPort.postMessage({ id, result: { rowGroups } });
      return;
    }
    const { parquetReadObjects } = await loaded;
    // utf8: false: columns annotated as strings stay strings; plain binary (a Hugging Face Image
    // feature's bytes) stays bytes instead of being decoded as (lossy) UTF-8 text.
    const rows = await parquetReadObjects({ file, metadata, rowStart, rowEnd, utf8: false });
    parentPort.postMessage({ id, result: rows });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});
`;

/** The base of every time limit, and what each MiB of a row group adds. */
const BASE_TIMEOUT_MS = 10_000;
const TIMEOUT_MS_PER_MIB = 1_000;

/** One Parquet file read in a worker; `close()` stops the worker. Errors are plain messages (the caller names the file). */
export class ParquetWorker {
  private readonly worker: Worker;
  private nextId = 0;

  /** `baseTimeoutMs`: the limit before the per-MiB part (default 10 s). */
  constructor(
    private readonly path: string,
    private readonly baseTimeoutMs = BASE_TIMEOUT_MS,
  ) {
    const hyparquet = pathToFileURL(createRequire(import.meta.url).resolve('hyparquet')).href;
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { hyparquet } });
    this.worker.unref(); // a reader left unfinished must not keep the process alive
  }

  /** The footer's row groups. */
  layout(): Promise<ParquetLayout> {
    return this.call({}, this.baseTimeoutMs) as Promise<ParquetLayout>;
  }

  /** Rows [rowStart, rowEnd) of the file, as hyparquet decodes them. */
  rows(rowStart: number, rowEnd: number, bytes: number): Promise<Record<string, unknown>[]> {
    const timeoutMs = this.baseTimeoutMs + Math.round((bytes / (1024 * 1024)) * TIMEOUT_MS_PER_MIB);
    return this.call({ rowStart, rowEnd }, timeoutMs) as Promise<Record<string, unknown>[]>;
  }

  close(): Promise<number> {
    return this.worker.terminate();
  }

  private call(request: { rowStart?: number; rowEnd?: number }, timeoutMs: number): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        this.worker.off('message', onMessage);
        this.worker.off('error', onError);
      };
      const timer = setTimeout(() => {
        finish();
        void this.worker.terminate();
        reject(new Error(`decoding took over ${(timeoutMs / 1000).toFixed(1)} s; the file is damaged or hostile`));
      }, timeoutMs);
      const onMessage = (message: { id: number; result?: unknown; error?: string }) => {
        if (message.id !== id) return;
        finish();
        if (message.error !== undefined) reject(new Error(message.error));
        else resolve(message.result);
      };
      const onError = (error: Error) => {
        finish();
        reject(error);
      };
      this.worker.on('message', onMessage);
      this.worker.on('error', onError);
      this.worker.postMessage({ id, path: this.path, ...request });
    });
  }
}
