/**
 * The Verilog rewards (verilog.ts) on the task's own specs: reference modules score 1, wrong ones
 * less, non-compiling ones 0; hostile designs are refused before compiling, and — with the checks
 * off — the sandbox alone stops them (zero-delay loop, a missing $finish, a flood of output) with
 * a score of 0. Needs Icarus Verilog (`apt-get install -y iverilog`, as .ci/run does).
 */
import { describe, expect, it } from 'vitest';
import { verilogExample, verilogTask } from '../data/tasks/verilog.js';
import { makeRewardInput } from './types.js';
import {
  requireVerilogTools,
  runVerilogTestbench,
  verilogDesignProblem,
  verilogFormat,
  verilogTestbench,
} from './verilog.js';

const reward = verilogTestbench();
const format = verilogFormat();
const score = async (completion: string, row: Record<string, unknown>) => reward(makeRewardInput({ completion, row }));
const adder = verilogExample(8); // add3 (the task is deterministic)
const counter = verilogExample(3); // cnt2
const TB = String(adder.testbench);

describe('verilog-testbench', () => {
  it('the generated specs are the expected ones', () => {
    expect([adder.module, counter.module]).toEqual(['add3', 'cnt2']);
    expect(verilogExample(8)).toEqual(adder);
  });

  it('scores the reference 1, the wrong modules the fraction of checks passed, broken ones 0', async () => {
    expect(await score(String(adder.answer), adder)).toBe(1);
    expect(await score(String(adder.wrong), adder)).toBe(3 / 8); // a^b: right only where no carry
    expect(await score(String(counter.answer), counter)).toBe(1);
    expect(await score(String(counter.wrong), counter)).toBe(4 / 7); // saturates at 3 instead of wrapping
    // a fenced answer is read from its block
    expect(await score('here:\n```verilog\n' + String(adder.answer) + '\n```\n', adder)).toBe(1);
    expect(await score('module add3(input [2:0] a,input [2:0] b,output [3:0] y);assign y=a+;endmodule', adder)).toBe(0);
    expect(await score('module add3(input [2:0] p,input [2:0] q,output [3:0] y);assign y=p+q;endmodule', adder)).toBe(
      0,
    ); // ports misnamed: no compile
  });

  it('refuses hostile designs before compiling, with a reason', () => {
    const cases: Array<[string, RegExp]> = [
      ['module add3(a,b,y); initial $display("x pass"); endmodule', /\$display/],
      ['module add3(a,b,y); initial $system("rm -rf /"); endmodule', /\$system/],
      ['`include "tb.v"\nmodule add3(a,b,y); endmodule', /directives/],
      ['module add3(a,b,y); initial grpo_tb.dut.y = 0; endmodule', /hierarchical/],
      ['module add3(a,b,y); grpo_tb t(); endmodule', /grpo_tb/],
    ];
    for (const [design, reason] of cases) expect(verilogDesignProblem(design, ['grpo_tb'])).toMatch(reason);
    expect(verilogDesignProblem(String(adder.answer), ['grpo_tb'])).toBeNull();
    expect(
      verilogDesignProblem('module m(input [3:0] a,output y); assign y=$signed(a)>0; endmodule', ['grpo_tb']),
    ).toBeNull();
  });

  it('a hostile design that passes the checks (zero-delay loop) is stopped by the timeout and scores 0', async () => {
    const loop =
      'module add3(input [2:0] a,input [2:0] b,output [3:0] y);reg [3:0] c=0;initial while (1) c=c+1;assign y=a+b;endmodule';
    expect(verilogDesignProblem(loop, ['grpo_tb'])).toBeNull();
    const run = await runVerilogTestbench(loop, TB, { timeoutMs: 2000 });
    expect(run.sandbox?.timedOut).toBe(true);
    expect(run.finished).toBe(false);
    expect(await verilogTestbench({ timeoutMs: 2000 })(makeRewardInput({ completion: loop, row: adder }))).toBe(0);
  });

  it('with the design checks off, the sandbox alone contains a flood of output, a missing $finish and $system', async () => {
    const flood =
      'module add3(input [2:0] a,input [2:0] b,output [3:0] y);assign y=a+b; initial forever $display("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");endmodule';
    const run = await runVerilogTestbench(flood, TB, { unchecked: true, maxOutputBytes: 4096, timeoutMs: 5000 });
    expect(run.sandbox?.outputTruncated).toBe(true);
    expect(run.finished).toBe(false);
    // a testbench without GRPO_DONE/$finish and a clock that never stops: runs until the timeout, scores nothing
    // (vvp's buffered reports die with it; an unfinished run scores 0 either way)
    const endless = 'module grpo_tb; reg c=0; always #1 c=~c; initial begin `GRPO_CHECK(1) end endmodule\n';
    const hung = await runVerilogTestbench('module m; endmodule', endless, { timeoutMs: 1500 });
    expect(hung.sandbox?.timedOut).toBe(true);
    expect(hung.finished).toBe(false);
    // Icarus 11 has no $system: vvp will not run the program
    const system = await runVerilogTestbench(
      'module add3(input [2:0] a,input [2:0] b,output [3:0] y);assign y=a+b; initial $system("touch /tmp/pwned");endmodule',
      TB,
      { unchecked: true },
    );
    expect(system.log).toMatch(/\$system\(\) is not defined/); // vvp refuses to load it
    expect(system.finished).toBe(false);
    expect(system.passed).toBe(0);
  });

  it('refuses to be built without iverilog, naming the program and the Debian package', () => {
    expect(() => requireVerilogTools('/nonexistent')).toThrow(
      'reward "verilog-testbench" needs the program `iverilog` (Icarus Verilog), which is not on /nonexistent: install the Debian package with `apt-get install -y iverilog`.',
    );
    expect(() => requireVerilogTools()).not.toThrow();
  });
});

describe('verilog-format', () => {
  const fmt = (completion: string) => format(makeRewardInput({ completion, row: adder }));
  it('1 for exactly one module with the spec name and ports, 0 for near misses', () => {
    expect(fmt(String(adder.answer))).toBe(1);
    expect(fmt(String(adder.wrong))).toBe(1); // structure right, function wrong
    expect(fmt('// add\n' + String(adder.answer) + '\n')).toBe(1);
    expect(fmt(String(adder.answer).replace('add3', 'add4'))).toBe(0); // wrong name
    expect(fmt(String(adder.answer).replace('output [3:0] y', 'output [3:0] s'))).toBe(0); // wrong port
    expect(fmt(String(adder.answer).replace('input [2:0] a,input [2:0] b', 'input [2:0] b,input [2:0] a'))).toBe(0); // order
    expect(fmt(String(adder.answer).replace('endmodule', ''))).toBe(0); // no endmodule
    expect(fmt(String(adder.answer) + '\nmodule x(a);endmodule')).toBe(0); // two modules
    expect(fmt('sure! ' + String(adder.answer))).toBe(0); // text outside the module
  });
});

describe('verilog task', () => {
  it('is deterministic with a disjoint held-out split, and refuses bad options', () => {
    const task = verilogTask();
    const train = task.trainExamples(40, 1);
    expect(task.trainExamples(40, 1)).toEqual(train);
    const held = new Set(task.evalExamples(40, 1).map((row) => row.specSeed));
    expect(train.some((row) => held.has(row.specSeed))).toBe(false);
    expect(new Set(train.map((row) => String(row.module).replace(/\d+$/, '')))).toEqual(
      new Set(['add', 'mux', 'par', 'gt', 'cnt']),
    );
    for (const row of train)
      for (const char of String(row.answer) + String(row.prompt)) expect(task.alphabet).toContain(char);
    expect(() => verilogTask({ teacherErrorRate: 2 })).toThrow(/taskOptions\.teacherErrorRate/);
  });
});
