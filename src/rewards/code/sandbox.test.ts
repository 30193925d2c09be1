/**
 * Hostile completions against the sandbox, as root and as an unprivileged user (`nobody`, when
 * the tests run as root, as CI does), each with the namespaces the machine offers and with them
 * turned off (GRPO_SANDBOX_NAMESPACES=0), which is what a container without namespaces gets.
 *
 * Each run bundles `sandbox.test-cases.ts` into a self-contained script in a world-readable temp
 * dir and starts it as the training process would run: holding a leaked descriptor of a root-only
 * file, with a TCP listener, a unix socket and an abstract unix socket of the host within reach.
 * Every case must end the way it has to (by its own exit, or, for a program that never ends, by
 * the time or output limit it runs into; a daemon's output from after its limit never seen) —
 * judged by what the sandbox reports, never by the clock — leave no process, keep the runner
 * alive, and be contained — except the holes docs/sandbox.md states for the fallback, which are
 * asserted to be exactly those, so a machine without namespaces still checks what it promises.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownUid, type HostileOutcome, type HostileTargets } from './sandbox.test-cases.js';

const root = process.platform === 'linux' && process.getuid?.() === 0;
/** Cases the fallback (no namespaces) does not contain, per docs/sandbox.md. */
const FALLBACK_HOLES = ['TCP to 127.0.0.1', 'host unix socket (path)', 'host unix socket (abstract)'];

let directory = '';
let runner = '';
let targets: HostileTargets;
const servers: Server[] = [];

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'grpo-hostile-'));
  chmodSync(directory, 0o755); // nobody must reach the runner and the socket
  runner = join(directory, 'runner.mjs');
  await build({
    entryPoints: [new URL('./sandbox.test-cases.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: runner,
    logLevel: 'error',
  });
  chmodSync(runner, 0o644);
  const secretDirectory = mkdtempSync(join(tmpdir(), 'grpo-secret-'));
  const secret = `TOP-SECRET-${randomBytes(8).toString('hex')}`;
  writeFileSync(join(secretDirectory, 'secret.txt'), secret, { mode: 0o600 });
  const listen = (server: Server, ...address: unknown[]) =>
    new Promise<void>((resolve) => (server.listen as (...args: unknown[]) => void)(...address, resolve));
  const answer = () => createServer((socket) => socket.on('error', () => {}).end('hello')); // the sandbox's side may reset
  servers.push(answer(), answer(), answer());
  await listen(servers[0]!, 0, '127.0.0.1');
  const unixPath = join(directory, 'host.sock');
  await listen(servers[1]!, unixPath);
  chmodSync(unixPath, 0o666); // reachable by permissions, so only the sandbox can stand in the way
  const abstractName = `grpo-hostile-${process.pid}`;
  await listen(servers[2]!, `\0${abstractName}`);
  targets = { port: (servers[0]!.address() as { port: number }).port, unixPath, abstractName, secretFd: 200, secret };
  writeFileSync(join(directory, 'secret-path'), join(secretDirectory, 'secret.txt'));
}, 60_000);

afterAll(() => {
  for (const server of servers) server.close();
  rmSync(readFileSync(join(directory, 'secret-path'), 'utf8').replace(/\/secret\.txt$/, ''), {
    recursive: true,
    force: true,
  });
  rmSync(directory, { recursive: true, force: true });
});

interface RunnerReport {
  outcomes: HostileOutcome[];
  summary:
    | {
        done: boolean;
        uid: number;
        capabilities: { namespaces: boolean; userNamespaces: boolean; separateUser: boolean };
        controlPassed: number[];
      }
    | undefined;
  exitCode: number | null;
  /** The runner's pid (bash execs it), whose fresh uids are its sandbox's. */
  pid: number;
}

/** Starts the runner like a training run that inherited fd 200 (the secret) without close-on-exec. */
function runRunner(asNobody: boolean, namespaces: boolean): Promise<RunnerReport> {
  const secretPath = readFileSync(join(directory, 'secret-path'), 'utf8');
  const drop = asNobody ? 'setpriv --reuid=nobody --regid=nogroup --clear-groups ' : '';
  const script = `exec 200<"$1"; exec ${drop}"$2" "$3" --run-hostile-cases "$4"`;
  const environment = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...(namespaces ? {} : { GRPO_SANDBOX_NAMESPACES: '0' }),
  };
  const child = spawn('bash', ['-c', script, 'bash', secretPath, process.execPath, runner, JSON.stringify(targets)], {
    cwd: directory,
    env: environment,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk));
  return new Promise((resolve) => {
    child.on('close', (exitCode) => {
      const lines = output
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line));
      if (exitCode !== 0) console.error(errors.slice(-2000));
      resolve({
        outcomes: lines.filter((line) => 'name' in line),
        summary: lines.find((line) => line.done),
        exitCode,
        pid: child.pid!,
      });
    });
  });
}

/** Processes of the sandbox's uids (nobody's, or the fresh ones of the runner) still alive after a runner ended. */
function strays(runner: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
        return !/^State:\s+Z/m.test(status) && (uid === 65534 || ownUid(uid, runner));
      } catch {
        return false;
      }
    });
}

const modes = [
  ...(root
    ? [
        { label: 'root', nobody: false },
        { label: 'unprivileged (nobody)', nobody: true },
      ]
    : [{ label: 'this user', nobody: false }]),
].flatMap((mode) => [
  { ...mode, namespaces: true },
  { ...mode, namespaces: false },
]);

describe('hostile completions', () => {
  it.each(modes)(
    '$label, namespaces allowed: $namespaces',
    async ({ nobody, namespaces }) => {
      const report = await runRunner(nobody, namespaces);
      expect(report.exitCode).toBe(0); // the runner (the training process) survived every case
      expect(report.summary?.done).toBe(true);
      expect(report.summary!.controlPassed).toEqual([2, 2]); // the right solution still passes, in both languages
      const layers = report.summary!.capabilities;
      if (!namespaces) expect(layers.namespaces).toBe(false);
      if (nobody) expect(layers.separateUser).toBe(false);
      const contained = report.outcomes.filter((outcome) => outcome.contained).length;
      console.log(
        `${nobody ? 'nobody' : 'caller'}, ${JSON.stringify(layers)}: contained ${contained} / ${report.outcomes.length}`,
      );
      for (const outcome of report.outcomes) {
        const context = `${outcome.language} ${outcome.name}: ${outcome.detail}`;
        // ended by its own exit, or (a program that never ends) by the limit it ran into; never by the runner's backstop
        expect(outcome.ending, context).toBe(outcome.mustEndBy);
        expect(outcome.leftovers, context).toEqual([]);
        expect(outcome.contained, context).toBe(layers.namespaces || !FALLBACK_HOLES.includes(outcome.name));
        // a private tmpfs, or (as root) the fresh uid's files removed; only the caller's own uid without namespaces leaves them
        if (layers.namespaces || layers.separateUser) expect(outcome.filesLeft, context).toEqual([]);
      }
      expect(report.outcomes.length).toBe(30);
      expect(strays(report.pid)).toEqual([]);
    },
    600_000,
  );
});
