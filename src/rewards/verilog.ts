/**
 * Verilog rewards for VeriReason (#1) and VERIRL (#121): the completion's module is compiled with
 * the row's testbench by Icarus Verilog (`iverilog`) and simulated (`vvp`), both inside the code
 * sandbox (code/sandbox.ts: time, memory, process and output limits, no network, a throwaway work
 * dir). Nothing the model wrote runs outside it.
 *
 * Definitions read from the authors' code (ours is written from them, not copied):
 *   - VeriReason: github.com/NellyW8/VeriReason, `GRPO/verilog_rewards_tb.py` (`verilog_reward`,
 *     `verilog_format_reward`, `run_ast_comparison`) and `GRPO/verilog_train_tb.py` (reward list
 *     `verilog` + `format`, TRL's default weights 1 and 1), commit d215b7f.
 *   - VERIRL: github.com/omniAI-Lab/VeriRL, commit f1d878e, releases only its testbench generator
 *     (`scripts/gen_testbench.py`, `prompt/generate_testbench_prompt.txt`: about five test cases,
 *     each printing passed or failed) and inference; its RL code, trace-back rescoring and
 *     sample-balanced weighting are "coming soon" (README), so nothing of VERIRL's reward is here
 *     beyond the per-case pass/fail testbench it shares with this protocol.
 *
 * `verilog-testbench`, scoring `verireason` (the default, VeriReason's `verilog_reward`):
 *     0                      the code is under 20 characters or has no `module`, the design alone
 *                            does not compile (`iverilog -t null`), or it is refused (below; ours)
 *     passReward (2.1)       passed / (passed + failed) ≥ passThreshold (0.99) and the run reached
 *                            the testbench's end
 *     compileReward (0.1) + structureWeight (1) × structure
 *                            otherwise: it compiles but fails, does not fit the testbench, or is
 *                            stopped; `structure` is verilog-structure.ts's score against the gold
 *   scoring `pass-fraction` (ours): passed / (passed + failed) when the run reached the end, else 0.
 * `verilog-format`, style `think-answer` (the default, VeriReason's `verilog_format_reward`): 1
 *     when a `<think>…</think>` is followed by an `<answer>…</answer>` holding a ```verilog block;
 *     the paper's 0.1 is the weight. Style `module` (ours): 1 when the answer holds exactly one
 *     `module NAME(...) ... endmodule`, NAME is the row's module name and the header's ports are the
 *     row's ports in order.
 *
 * Testbench protocol (a row's `testbench` column): the reward defines two macros before it,
 * `` `GRPO_CHECK(cond) `` (reports one check: pass when `cond` is 1, fail otherwise, X included)
 * and `` `GRPO_DONE `` (reports the end and calls `$finish`). Reports carry a random nonce.
 * VeriReason's testbenches instead write `test_vectors.txt`, compared line by line with the gold
 * module's vectors over the shorter of the two; one check here is one vector there.
 * Refused designs (score 0, before any compile): backquote directives, system tasks other than
 * `$signed`/`$unsigned`/`$clog2`, hierarchical references (`a.b`), escaped identifiers, and any
 * name of a module the testbench defines — so a design cannot print, forge or reach the checks.
 *
 * Is not: a synthesis check, a formal equivalence check, VeriReason's renaming of the design's
 * module to the gold's name (here a misnamed module does not fit the testbench), or VERIRL's
 * learned reward model.
 */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { newNonce, runSandboxed, type SandboxResult } from './code/sandbox.js';
import { SANDBOX_PATH } from './code/sandbox-commands.js';
import { stringColumn, type RewardFn } from './types.js';
import { stripVerilogComments, verilogStructureScore } from './verilog-structure.js';

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
  /** The design alone compiled (`iverilog -t null`). */
  syntaxOk: boolean;
  /** The design compiled with the testbench. */
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

// Trusted driver run inside the sandbox: check the design alone (VeriReason's syntax check), compile
// it with the testbench, remove the sources, then become vvp so that its output goes straight to the
// sandbox's capped pipes.
const DRIVER = `
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)
def compile(marker, args):
    r = subprocess.run(['iverilog', '-g2012'] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.stdout.write(marker + '\\n' + r.stdout.decode('utf-8', 'replace')[:2000])
        sys.exit(3)
compile('GRPO-SYNTAX-ERROR', ['-t', 'null', 'design.v'])
compile('GRPO-COMPILE-ERROR', ['-o', 'sim.vvp', 'tb.v', 'design.v'])
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
  if (refused)
    return { passed: 0, failed: 0, finished: false, syntaxOk: false, compiled: false, refused, log: '', sandbox: null };
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
  const syntaxOk = !sandbox.stdout.startsWith('GRPO-SYNTAX-ERROR');
  const compiled = syntaxOk && !sandbox.stdout.startsWith('GRPO-COMPILE-ERROR');
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
    syntaxOk,
    compiled,
    refused,
    log,
    sandbox,
  };
}

/** Options of {@link verilogTestbench}; the defaults are VeriReason's. */
export interface VerilogTestbenchOptions {
  /** `verireason` (default): the paper's tiered reward; `pass-fraction`: passed / all checks. */
  scoring?: 'verireason' | 'pass-fraction';
  /** Pass fraction at or above which the design counts as passing (default 0.99). */
  passThreshold?: number;
  /** Score of a passing design (default 2.1). */
  passReward?: number;
  /** Score of a design that compiles alone but does not pass (default 0.1). */
  compileReward?: number;
  /** Weight of the structure score against the gold module for such a design (default 1; 0 = off). */
  structureWeight?: number;
  /** Column with the gold module (default `answer`), read when structureWeight > 0. */
  goldColumn?: string;
  /** Column with the testbench (default `testbench`). */
  testbenchColumn?: string;
  timeoutMs?: number;
  memoryMb?: number;
}

/**
 * The testbench reward (file header: both scorings). Refuses to be built when iverilog/vvp are
 * absent.
 */
export function verilogTestbench({
  scoring = 'verireason',
  passThreshold = 0.99,
  passReward = 2.1,
  compileReward = 0.1,
  structureWeight = 1,
  goldColumn = 'answer',
  testbenchColumn = 'testbench',
  timeoutMs,
  memoryMb,
}: VerilogTestbenchOptions = {}): RewardFn {
  requireVerilogTools();
  return async ({ completion, row }) => {
    const testbench = stringColumn(row, testbenchColumn, 'verilog-testbench');
    const design = extractVerilog(completion);
    if (scoring === 'verireason' && (design.trim().length < 20 || !design.includes('module'))) return 0;
    const run = await runVerilogTestbench(design, testbench, { timeoutMs, memoryMb });
    const total = run.passed + run.failed;
    const fraction = run.finished && total > 0 ? run.passed / total : 0;
    if (scoring === 'pass-fraction') return fraction;
    if (!run.syntaxOk) return 0; // refused designs are not syntax-checked and land here too
    if (fraction >= passThreshold) return passReward;
    const structure =
      structureWeight > 0 ? verilogStructureScore(design, stringColumn(row, goldColumn, 'verilog-testbench')) : 0;
    return compileReward + structureWeight * structure;
  };
}

/** Options of {@link verilogStructure}. */
export interface VerilogStructureOptions {
  /** Column with the gold module (default `answer`). */
  goldColumn?: string;
}

/** VeriReason's structure score of the answer's module against the gold one, in [0, 1] (verilog-structure.ts). */
export function verilogStructure({ goldColumn = 'answer' }: VerilogStructureOptions = {}): RewardFn {
  return ({ completion, row }) =>
    verilogStructureScore(extractVerilog(completion), stringColumn(row, goldColumn, 'verilog-structure'));
}

/** Options of {@link verilogFormat}; the default style is VeriReason's. */
export interface VerilogFormatOptions {
  /** `think-answer` (default): VeriReason's layout; `module`: the row's module header (ours). */
  style?: 'think-answer' | 'module';
  /** Column with the expected module name (default `module`; style `module`). */
  moduleColumn?: string;
  /** Column with the expected port names, comma-separated, in order (default `ports`; style `module`). */
  portsColumn?: string;
}

/**
 * `<think>…</think>`, then (whitespace between) `<answer>`, then a ```verilog block closed by ```,
 * then `</answer>`, anywhere in the text: VeriReason's pattern, tried at every `</think>`.
 */
function thinkAnswerLayout(completion: string): boolean {
  const firstThink = completion.indexOf('<think>');
  if (firstThink < 0) return false;
  for (const thinkEnd of completion.matchAll(/<\/think>\s*<answer>/g)) {
    if (thinkEnd.index < firstThink + 7) continue;
    const inside = completion.slice(thinkEnd.index + thinkEnd[0].length);
    const fence = inside.indexOf('```verilog');
    const fenceEnd = fence < 0 ? -1 : inside.indexOf('```', fence + 10);
    if (fenceEnd >= 0 && inside.includes('</answer>', fenceEnd + 3)) return true;
  }
  return false;
}

/** 1 when the answer has the chosen layout (see the file header), else 0. */
export function verilogFormat({
  style = 'think-answer',
  moduleColumn = 'module',
  portsColumn = 'ports',
}: VerilogFormatOptions = {}): RewardFn {
  if (style === 'think-answer') return ({ completion }) => (thinkAnswerLayout(completion) ? 1 : 0);
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
