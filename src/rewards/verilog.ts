/**
 * Verilog rewards for VeriReason (#1) and VERIRL (#121): the completion's module is compiled with
 * the row's testbench by Icarus Verilog (`iverilog`) and simulated (`vvp`), both inside the code
 * sandbox (code/sandbox.ts: time, memory, process and output limits, no network, a throwaway work
 * dir). Nothing the model wrote runs outside it.
 *   - `verilog-testbench`: passed checks / all checks of the testbench, when the simulation reaches
 *     the testbench's end (`GRPO_DONE`); 0 when the design is refused, does not compile, or the run
 *     is stopped (timeout, output cap, crash) before the end.
 *   - `verilog-format`: 1 when the answer holds exactly one `module NAME(...) ... endmodule`, NAME is
 *     the row's module name and the header's ports are the row's ports in order; else 0.
 *
 * Testbench protocol (a row's `testbench` column): the reward defines two macros before it,
 * `` `GRPO_CHECK(cond) `` (reports one check: pass when `cond` is 1, fail otherwise, X included)
 * and `` `GRPO_DONE `` (reports the end and calls `$finish`). Reports carry a random nonce.
 * Refused designs (score 0, before any compile): backquote directives, system tasks other than
 * `$signed`/`$unsigned`/`$clog2`, hierarchical references (`a.b`), escaped identifiers, and any
 * name of a module the testbench defines — so a design cannot print, forge or reach the checks.
 *
 * Is not: a synthesis check, a formal equivalence check, or the papers' exact reward weights.
 */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { newNonce, runSandboxed, type SandboxResult } from './code/sandbox.js';
import { SANDBOX_PATH } from './code/sandbox-commands.js';
import { stringColumn, type RewardFn } from './types.js';

/** Throws one sentence naming the missing program and its Debian package when `iverilog` or `vvp` is absent. */
export function requireVerilogTools(path: string = SANDBOX_PATH, rewardName = 'verilog-testbench'): void {
  for (const program of ['iverilog', 'vvp']) {
    const found = path.split(':').some((directory) => {
      try {
        accessSync(join(directory, program), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    if (!found)
      throw new Error(
        `reward "${rewardName}" needs the program \`${program}\` (Icarus Verilog), which is not on ${path}: install the Debian package with \`apt-get install -y iverilog\`.`,
      );
  }
}

/** The Verilog in a completion: the last ```verilog (or any) fenced block, else the whole text. */
export function extractVerilog(completion: string): string {
  const tagged = [...completion.matchAll(/```(?:verilog|systemverilog|v|sv)[ \t]*\n([\s\S]*?)```/gi)];
  if (tagged.length) return tagged[tagged.length - 1]![1]!;
  const any = [...completion.matchAll(/```[\w-]*[ \t]*\n([\s\S]*?)```/g)];
  return any.length ? any[any.length - 1]![1]! : completion;
}

/** Verilog text without `//` and `/* *\/` comments. */
export function stripVerilogComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}

/** The modules of a Verilog text: name and header port names, in order. */
export function verilogModules(text: string): Array<{ name: string; ports: string[] }> {
  const code = stripVerilogComments(text);
  const modules: Array<{ name: string; ports: string[] }> = [];
  for (const match of code.matchAll(/\bmodule\s+([A-Za-z_]\w*)\s*(?:#\s*\([\s\S]*?\)\s*)?\(([\s\S]*?)\)\s*;/g)) {
    const ports = match[2]!
      .split(',')
      .map(
        (part) =>
          part
            .replace(/\[[^\]]*\]/g, ' ')
            .trim()
            .split(/\s+/)
            .at(-1) ?? '',
      )
      .filter((port) => port !== '');
    modules.push({ name: match[1]!, ports });
  }
  return modules;
}

/** Why a design is refused before simulation (see the file header), or null when it may run. */
export function verilogDesignProblem(design: string, testbenchModules: readonly string[]): string | null {
  const code = stripVerilogComments(design);
  if (code.includes('`')) return 'compiler directives (`) are not allowed in the design';
  if (code.includes('\\')) return 'escaped identifiers are not allowed in the design';
  const tasks = [...code.matchAll(/\$[A-Za-z_]\w*/g)].map((m) => m[0]);
  const banned = tasks.find((task) => !['$signed', '$unsigned', '$clog2'].includes(task));
  if (banned) return `system task ${banned} is not allowed in the design`;
  if (/[A-Za-z_][\w$]*\s*\.\s*[A-Za-z_]/.test(code.replace(/\d+\.\d+/g, '0')))
    return 'hierarchical references (a.b) are not allowed in the design';
  const words = new Set(code.match(/[A-Za-z_]\w*/g) ?? []);
  const reached = testbenchModules.find((name) => words.has(name));
  if (reached) return `the design names the testbench's module ${reached}`;
  return null;
}

/** What one testbench simulation gave. */
export interface VerilogRun {
  passed: number;
  failed: number;
  /** The simulation reached `GRPO_DONE`. */
  finished: boolean;
  compiled: boolean;
  /** Why the design was refused before compiling, or null. */
  refused: string | null;
  /** Compiler or simulator output (first 2000 characters). */
  log: string;
  sandbox: SandboxResult | null;
}

/** Limits of one simulation. */
export interface VerilogRunOptions {
  timeoutMs?: number;
  memoryMb?: number;
  maxOutputBytes?: number;
  /** Skip the design checks (tests use this to show what the sandbox alone contains). */
  unchecked?: boolean;
  signal?: AbortSignal;
}

// Trusted driver run inside the sandbox: compile, remove the sources, then become vvp so that its
// output goes straight to the sandbox's capped pipes.
const DRIVER = `
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
r = subprocess.run(['iverilog', '-g2012', '-o', 'sim.vvp', 'tb.v', 'design.v'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
if r.returncode != 0:
    sys.stdout.write('GRPO-COMPILE-ERROR\\n' + r.stdout.decode('utf-8', 'replace')[:2000])
    sys.exit(3)
os.remove('tb.v'); os.remove('design.v')
sys.stdout.flush()
os.execvp('vvp', ['vvp', '-n', 'sim.vvp'])
`;

/** Compiles `design` with `testbench` and simulates it in the sandbox; counts the nonce-marked reports. */
export async function runVerilogTestbench(
  design: string,
  testbench: string,
  options: VerilogRunOptions = {},
): Promise<VerilogRun> {
  const testbenchModules = verilogModules(testbench).map((module) => module.name);
  const refused = options.unchecked ? null : verilogDesignProblem(design, testbenchModules);
  if (refused) return { passed: 0, failed: 0, finished: false, compiled: false, refused, log: '', sandbox: null };
  const nonce = newNonce();
  const macros =
    `\`define GRPO_CHECK(c) begin if ((c) === 1'b1) $display("${nonce} pass"); else $display("${nonce} fail"); end\n` +
    `\`define GRPO_DONE begin $display("${nonce} done"); $finish; end\n`;
  const sandbox = await runSandboxed(DRIVER, {
    language: 'python',
    timeoutMs: options.timeoutMs ?? 5000,
    memoryMb: options.memoryMb ?? 512,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024,
    maxProcesses: 16,
    files: { 'tb.v': macros + testbench, 'design.v': design },
    signal: options.signal,
  });
  const compiled = !sandbox.stdout.startsWith('GRPO-COMPILE-ERROR');
  let passed = 0;
  let failed = 0;
  let finished = false;
  for (const line of sandbox.stdout.split('\n')) {
    if (line === `${nonce} pass`) passed++;
    else if (line === `${nonce} fail`) failed++;
    else if (line === `${nonce} done`) finished = true;
  }
  const log = (sandbox.stdout + sandbox.stderr).slice(0, 2000);
  return {
    passed,
    failed,
    finished: finished && !sandbox.timedOut && !sandbox.outputTruncated,
    compiled,
    refused,
    log,
    sandbox,
  };
}

/** Options of {@link verilogTestbench}. */
export interface VerilogTestbenchOptions {
  /** Column with the testbench (default `testbench`). */
  testbenchColumn?: string;
  timeoutMs?: number;
  memoryMb?: number;
}

/**
 * passed / (passed + failed) when the simulation reached `GRPO_DONE`, else 0 (refused, not
 * compiling, timed out, output cap, crash). Refuses to be built when iverilog/vvp are absent.
 */
export function verilogTestbench({
  testbenchColumn = 'testbench',
  timeoutMs,
  memoryMb,
}: VerilogTestbenchOptions = {}): RewardFn {
  requireVerilogTools();
  return async ({ completion, row }) => {
    const testbench = stringColumn(row, testbenchColumn, 'verilog-testbench');
    const run = await runVerilogTestbench(extractVerilog(completion), testbench, { timeoutMs, memoryMb });
    const total = run.passed + run.failed;
    return run.finished && total > 0 ? run.passed / total : 0;
  };
}

/** Options of {@link verilogFormat}. */
export interface VerilogFormatOptions {
  /** Column with the expected module name (default `module`). */
  moduleColumn?: string;
  /** Column with the expected port names, comma-separated, in order (default `ports`). */
  portsColumn?: string;
}

/** 1 when the answer is exactly one `module NAME(ports) ... endmodule` with the row's name and ports, else 0. */
export function verilogFormat({ moduleColumn = 'module', portsColumn = 'ports' }: VerilogFormatOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const name = stringColumn(row, moduleColumn, 'verilog-format');
    const ports = stringColumn(row, portsColumn, 'verilog-format')
      .split(',')
      .map((port) => port.trim())
      .filter((port) => port !== '');
    const code = stripVerilogComments(extractVerilog(completion));
    const starts = code.match(/\bmodule\b/g)?.length ?? 0;
    const ends = code.match(/\bendmodule\b/g)?.length ?? 0;
    if (starts !== 1 || ends !== 1 || !/\bendmodule\s*$/.test(code)) return 0;
    const modules = verilogModules(code);
    if (modules.length !== 1 || modules[0]!.name !== name) return 0;
    if (code.slice(0, code.search(/\bmodule\b/)).trim() !== '') return 0;
    const got = modules[0]!.ports;
    return got.length === ports.length && got.every((port, i) => port === ports[i]) ? 1 : 0;
  };
}
