/*
 * Reading run folders (docs/run-folder.md) for the dashboard: the list of runs, a run's metrics
 * and samples parsed from JSONL, its config and summary. Every path is resolved through
 * `resolveInside`, which refuses names that could leave the runs folder and anything whose real
 * path (after symlinks) lies outside it, and every file is read through `readRegularFile`, which
 * refuses FIFOs, devices and sockets (a read of a FIFO with no writer would never return).
 * This is not the trainer's writer and imports nothing from it: it only reads the files, and it
 * tolerates a run being written while it reads (a half-written last JSONL line is left for later).
 */
import { constants } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, sep } from 'node:path';

/** A request for something outside the runs folder; the server answers 403. */
export class RefusedPathError extends Error {}

/** A run, file or step that does not exist; the server answers 404. */
export class NotFoundError extends Error {}

/** One parsed JSONL line with its 1-based line number in the file. */
export interface JsonLine {
  line: number;
  value: Record<string, unknown>;
}

/** The parsed lines of a JSONL file plus what could not be read. */
export interface ParsedJsonLines {
  rows: JsonLine[];
  /** Line number to ask for next time: the first line not yet complete. */
  nextLine: number;
  /** True when the file ends in a line that is still being written. */
  partialLastLine: boolean;
  /** One sentence per bad line, naming the file and line. */
  problems: string[];
}

/** What the runs list shows for one run. */
export interface RunListEntry {
  id: string;
  status: string;
  /** Why a run failed or was interrupted, from summary.json (null when it gives none). */
  reason: string | null;
  phase: string | null;
  lastStep: number | null;
  updatedAt: string | null;
  latest: Record<string, number>;
  evalBefore: unknown;
  evalAfter: unknown;
}

/** The metrics shown in the runs list, each the last value logged for it. */
export const keyMetricNames = ['reward/mean', 'eval/accuracy', 'loss/kl', 'entropy', 'completions/meanLength'];

/**
 * A run whose liveness cannot be checked (no summary.json, or one written on another host or by a
 * trainer that did not record its pid) and whose metrics have not changed for this long is shown as
 * interrupted. A guess: a single step slower than this on another host is shown interrupted too.
 */
const staleAfterMilliseconds = 5 * 60 * 1000;

/**
 * Resolve `names` below `root` (itself a real path) and return the real path; refuse names
 * that are empty, dot-segments, hidden or contain separators, and any real path outside `root`.
 */
export async function resolveInside(root: string, names: string[]): Promise<string> {
  for (const name of names) {
    if (name === '' || name.startsWith('.') || /[/\\\0]/.test(name)) {
      throw new RefusedPathError(`refused path segment ${JSON.stringify(name)}`);
    }
  }
  let real: string;
  try {
    real = await realpath(join(root, ...names));
  } catch {
    throw new NotFoundError(`not found: ${names.join('/')}`);
  }
  if (real !== root && !real.startsWith(root + sep)) {
    throw new RefusedPathError(`${names.join('/')} resolves outside the runs folder`);
  }
  return real;
}

/**
 * The text of a regular file; anything else (FIFO, device, socket) is refused naming `label`.
 * O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer, so the type
 * check on the open handle runs before any read can block.
 */
export async function readRegularFile(path: string, label: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new RefusedPathError(`${label} is not a regular file`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** The binary content of a regular file (an image); anything else is refused naming `label`. */
async function readRegularBytes(path: string, label: string): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new RefusedPathError(`${label} is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** The image grids a run writes (`samples-step-N.png`, flow runs: docs/image-models.md); nothing else is served. */
const imageGridName = /^samples-step-(\d+)\.png$/;

/** One image grid of a run. */
export interface RunImage {
  name: string;
  step: number;
}

/** Parse JSONL text; a last line without newline that does not parse is treated as still being written. */
export function parseJsonLines(text: string, fileName: string): ParsedJsonLines {
  const pieces = text.split('\n');
  const endsComplete = text.endsWith('\n') || text === '';
  if (endsComplete) pieces.pop();
  const rows: JsonLine[] = [];
  const problems: string[] = [];
  let partialLastLine = false;
  let nextLine = pieces.length + 1;
  pieces.forEach((piece, index) => {
    const line = index + 1;
    const isLast = index === pieces.length - 1;
    if (piece.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(piece);
    } catch (error) {
      if (isLast && !endsComplete) {
        partialLastLine = true;
        nextLine = line;
      } else {
        problems.push(`${fileName} line ${line}: not valid JSON (${(error as Error).message})`);
      }
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${fileName} line ${line}: expected a JSON object`);
      return;
    }
    rows.push({ line, value: value as Record<string, unknown> });
  });
  return { rows, nextLine, partialLastLine, problems };
}

/** Keep only rows whose `step` is a number, reporting the others by line. */
function requireSteps(parsed: ParsedJsonLines, fileName: string): ParsedJsonLines {
  const rows = parsed.rows.filter((row) => typeof row.value.step === 'number');
  const problems = parsed.rows
    .filter((row) => typeof row.value.step !== 'number')
    .map((row) => `${fileName} line ${row.line}: field "step" is missing or not a number`);
  return { ...parsed, rows, problems: [...parsed.problems, ...problems] };
}

interface CacheEntry {
  modifiedMs: number;
  size: number;
  parsed: ParsedJsonLines;
}

/** Reads run files below one runs folder, re-parsing a JSONL file only when it changed. */
export class RunFolderReader {
  private readonly cache = new Map<string, CacheEntry>();

  /** `root` must be the real path (no symlinks) of the runs folder. */
  constructor(readonly root: string) {}

  /** The runs, newest id first, with status, last step and key metrics. */
  async listRuns(): Promise<RunListEntry[]> {
    const entries = await readdir(this.root, { withFileTypes: true });
    const ids = entries
      .filter((entry) => !entry.name.startsWith('.') && (entry.isDirectory() || entry.isSymbolicLink()))
      .map((entry) => entry.name)
      .sort()
      .reverse();
    const runs: RunListEntry[] = [];
    for (const id of ids) {
      const entry = await this.describeRun(id).catch(() => null);
      if (entry !== null) runs.push(entry);
    }
    return runs;
  }

  /** One run's list entry; throws for a folder that is not a run (no config or metrics file). */
  async describeRun(id: string): Promise<RunListEntry> {
    const folder = await resolveInside(this.root, [id]);
    if (!(await stat(folder)).isDirectory()) throw new NotFoundError(`run ${id} is not a folder`);
    const summary = await this.readJson(id, 'summary.json').catch(() => null);
    const metrics = await this.readMetrics(id).catch(() => null);
    if (metrics === null && (await this.readJson(id, 'config.json').catch(() => null)) === null) {
      throw new NotFoundError(`${id} has neither metrics.jsonl nor config.json`);
    }
    const last = metrics?.rows.at(-1)?.value;
    const latest: Record<string, number> = {};
    for (const row of metrics?.rows ?? []) {
      for (const name of keyMetricNames) {
        if (typeof row.value[name] === 'number') latest[name] = row.value[name] as number;
      }
    }
    const modified = await this.modifiedTime(id, 'metrics.jsonl');
    return {
      id,
      status: inferStatus(summary, modified),
      reason: typeof summary?.reason === 'string' ? summary.reason : null,
      phase: typeof last?.phase === 'string' ? last.phase : null,
      lastStep: typeof last?.step === 'number' ? last.step : null,
      updatedAt: modified === null ? null : new Date(modified).toISOString(),
      latest,
      evalBefore: summary?.evalBefore ?? null,
      evalAfter: summary?.evalAfter ?? null,
    };
  }

  /** The run's parsed metrics.jsonl (rows with a numeric `step`). */
  async readMetrics(id: string): Promise<ParsedJsonLines> {
    return requireSteps(await this.readJsonLines(id, 'metrics.jsonl'), 'metrics.jsonl');
  }

  /** The run's parsed samples.jsonl (one row per prompt group); none yet, or a run that logs none (flow runs): no rows. */
  async readSamples(id: string): Promise<ParsedJsonLines> {
    await resolveInside(this.root, [id]); // a run that does not exist is still not found
    if ((await this.modifiedTime(id, 'samples.jsonl')) === null)
      return { rows: [], nextLine: 1, partialLastLine: false, problems: [] };
    return requireSteps(await this.readJsonLines(id, 'samples.jsonl'), 'samples.jsonl');
  }

  /** A JSON file of the run (config.json, summary.json) as an object. */
  async readJson(id: string, fileName: string): Promise<Record<string, unknown>> {
    const path = await resolveInside(this.root, [id, fileName]);
    const text = await readRegularFile(path, `${id}/${fileName}`);
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new Error(`${id}/${fileName} is not valid JSON: ${(error as Error).message}`);
    }
  }

  /** Names of the run's checkpoint folders (`step-N`), in step order. */
  async listCheckpoints(id: string): Promise<string[]> {
    const folder = await resolveInside(this.root, [id, 'checkpoints']).catch(() => null);
    if (folder === null) return [];
    const entries = await readdir(folder, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isDirectory() && /^step-\d+$/.test(entry.name))
      .map((entry) => entry.name)
      .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
  }

  /** The run's image grids (`samples-step-N.png`), in step order. */
  async listImages(id: string): Promise<RunImage[]> {
    const folder = await resolveInside(this.root, [id]);
    const entries = await readdir(folder, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile() && imageGridName.test(entry.name))
      .map((entry) => ({ name: entry.name, step: Number(imageGridName.exec(entry.name)![1]) }))
      .sort((a, b) => a.step - b.step);
  }

  /**
   * The bytes of one image: an image-generator run's grid (samples-step-N.png, in the run folder), or
   * a vision-language run's sample image (images/<name>.png, named in samples.jsonl). Any other name
   * is refused: only these two kinds of file are served.
   */
  async readImage(id: string, name: string): Promise<Buffer> {
    if (imageGridName.test(name)) return readRegularBytes(await resolveInside(this.root, [id, name]), `${id}/${name}`);
    if (!/^[\w-]+\.png$/.test(name)) throw new RefusedPathError(`refused image name ${JSON.stringify(name)}`);
    return readRegularBytes(await resolveInside(this.root, [id, 'images', name]), `${id}/images/${name}`);
  }

  private async readJsonLines(id: string, fileName: string): Promise<ParsedJsonLines> {
    const path = await resolveInside(this.root, [id, fileName]);
    const info = await stat(path);
    const cached = this.cache.get(path);
    if (cached !== undefined && cached.modifiedMs === info.mtimeMs && cached.size === info.size) return cached.parsed;
    const parsed = parseJsonLines(await readRegularFile(path, `${id}/${fileName}`), fileName);
    this.cache.set(path, { modifiedMs: info.mtimeMs, size: info.size, parsed });
    return parsed;
  }

  private async modifiedTime(id: string, fileName: string): Promise<number | null> {
    try {
      return (await stat(await resolveInside(this.root, [id, fileName]))).mtimeMs;
    } catch {
      return null;
    }
  }
}

/**
 * The status shown for a run. summary.json's status as written, except `running`: the trainer
 * records its pid and host, so on the same host a running run whose process is gone is
 * `interrupted` (killed, or the machine restarted); elsewhere stale metrics decide. Without a
 * summary, a run is `starting` until its first metrics, then judged by their age.
 */
export function inferStatus(
  summary: Record<string, unknown> | null,
  metricsModifiedMs: number | null,
  now = Date.now(),
): string {
  const status = summary !== null && typeof summary.status === 'string' ? summary.status : null;
  if (status !== null && status !== 'running') return status;
  if (status === 'running' && typeof summary!.pid === 'number' && summary!.hostname === hostname()) {
    return processIsAlive(summary!.pid) ? 'running' : 'interrupted';
  }
  if (metricsModifiedMs === null) return status ?? 'starting';
  return now - metricsModifiedMs < staleAfterMilliseconds ? 'running' : 'interrupted';
}

/** True while a process with this id exists (signal 0 checks without sending anything). */
function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, but belongs to another user
  }
}
