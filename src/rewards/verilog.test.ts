/**
 * The Verilog rewards (verilog.ts, verilog-structure.ts) on the task's own specs. VeriReason's
 * scoring: a passing module 2.1, a compiling wrong one 0.1 + its structure score, a broken or
 * module-less one 0; the structure scores are numbers the authors' `run_ast_comparison`
 * (github.com/NellyW8/VeriReason GRPO/verilog_rewards_tb.py) printed for these designs. The
 * pass-fraction scoring: reference 1, wrong ones partial, broken 0. Hostile designs are refused
 * before compiling, and — with the checks off — the sandbox alone stops them (zero-delay loop, a
 * missing $finish, a flood of output). Needs Icarus Verilog (`apt-get install -y iverilog`, as
 * .ci/run does).
 */
import { describe, expect, it } from 'vitest';
import { verilogExample, verilogTask } from '../data/tasks/verilog.js';
import { makeRewardInput } from './types.js';
import {
  requireVerilogTools,
  runVerilogTestbench,
  verilogDesignProblem,
  verilogFormat,
  verilogStructure,
  verilogTestbench,
} from './verilog.js';
import { matchedStatements, verilogStatements, verilogStructureScore } from './verilog-structure.js';

const reward = verilogTestbench({ scoring: 'pass-fraction' });
const paper = verilogTestbench();
const format = verilogFormat({ style: 'module' });
const score = async (completion: string, row: Record<string, unknown>) => reward(makeRewardInput({ completion, row }));
const paperScore = async (completion: string, row: Record<string, unknown>) =>
  paper(makeRewardInput({ completion, row }));
const adder = verilogExample(8); // add3 (the task is deterministic)
const counter = verilogExample(3); // cnt2
const TB = String(adder.testbench);

describe('verilog-testbench', () => {
  it('the generated specs are the expected ones', () => {
    expect([adder.module, counter.module]).toEqual(['add3', 'cnt2']);
    expect(verilogExample(8)).toEqual(adder);
  });

  it("VeriReason's scoring: passing 2.1, compiling but failing 0.1 + structure, broken or module-less 0", async () => {
    expect(await paperScore(String(adder.answer), adder)).toBe(2.1);
    expect(await paperScore(String(adder.wrong), adder)).toBeCloseTo(0.1 + 0.8, 12); // a^b: 3/8 checks < 0.99
    expect(await paperScore(String(counter.wrong), counter)).toBeCloseTo(0.1 + 0.9366013071895424, 12);
    const misnamed = 'module add3(input [2:0] p,input [2:0] q,output [3:0] y);assign y=p+q;endmodule';
    expect(await paperScore(misnamed, adder)).toBeCloseTo(0.1 + 0.4, 12); // compiles alone, does not fit the testbench
    expect(
      await paperScore('module add3(input [2:0] a,input [2:0] b,output [3:0] y);assign y=a+;endmodule', adder),
    ).toBe(0); // syntax error
    expect(await paperScore('', adder)).toBe(0); // an empty file compiles; no module scores 0, not 0.1
    expect(await paperScore('module m;endmodule', adder)).toBe(0); // compiles alone, but under 20 characters
    expect(
      await paperScore(
        'module add3(input [2:0] a,input [2:0] b,output [3:0] y);initial $display("1 pass");endmodule',
        adder,
      ),
    ).toBe(0); // refused (ours): scores 0, not 0.1
    // options: the threshold, the tiers and the structure weight
    const lenient = verilogTestbench({ passThreshold: 0.5 });
    expect(await lenient(makeRewardInput({ completion: String(counter.wrong), row: counter }))).toBe(2.1); // 4/7 ≥ 0.5
    const binary = verilogTestbench({ passReward: 1, compileReward: 0, structureWeight: 0 });
    expect(await binary(makeRewardInput({ completion: String(adder.wrong), row: adder }))).toBe(0);
    expect(await binary(makeRewardInput({ completion: String(adder.answer), row: adder }))).toBe(1);
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
    const stopped = makeRewardInput({ completion: loop, row: adder });
    expect(await verilogTestbench({ scoring: 'pass-fraction', timeoutMs: 2000 })(stopped)).toBe(0);
    // VeriReason's scoring: it compiles, so a stopped run is a failing design (0.1 + structure)
    expect(await verilogTestbench({ timeoutMs: 2000 })(stopped)).toBeCloseTo(
      0.1 + verilogStructureScore(loop, String(adder.answer)),
      12,
    );
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

describe('verilog-structure', () => {
  // designs of ours; the expected numbers are what the authors' run_ast_comparison printed for them
  const caseShort =
    "module m(input [1:0] s, output reg y);\nalways @(*) begin case (s) 2'd0: y = 0; default: y = 1; endcase end\nendmodule";
  const caseLong =
    "module m(input [1:0] s, output reg y);\nreg t;\nwire w;\nalways @(*) begin\n case (s)\n 2'd0: y = 1;\n default: y = 0;\n endcase\nend\nsub u1(.a(s));\nendmodule";
  const fsmAnsi =
    "module fsm(input clk, input rst, input x, output reg [1:0] st);\n// state machine\nalways @(posedge clk or posedge rst) begin\n  if (rst) st <= 2'b00; /* reset */\n  else if ((x & st[0]) | st[1]) st <= st + 1;\n  else st <= 0;\nend\nalways @(*) begin\n  case (st)\n    2'b00: y = 0;\n    2'b01, 2'b10: y = 1;\n    default: y = x;\n  endcase\nend\nendmodule\n";
  const fsmOld =
    'module fsm(clk, rst, x, st);\ninput clk;\ninput rst;\ninput x;\noutput [1:0] st;\nreg [1:0] st;\nwire n;\nassign n = x &\n st[0];\nalways @(posedge clk) if (rst) st <= 0; else st <= st + n;\nendmodule';

  it("agrees with the authors' scores, quirks included", () => {
    expect(verilogStructureScore(String(adder.wrong), String(adder.answer))).toBeCloseTo(0.8, 12);
    expect(verilogStructureScore(String(counter.wrong), String(counter.answer))).toBeCloseTo(0.9366013071895424, 12);
    expect(verilogStructureScore(caseShort, caseLong)).toBeCloseTo(0.8076555023923444, 12);
    expect(verilogStructureScore(fsmAnsi, fsmOld)).toBeCloseTo(0.12, 12);
    expect(verilogStructureScore(fsmOld, fsmAnsi)).toBeCloseTo(0.12, 12);
    expect(verilogStructureScore('', String(adder.answer))).toBe(0);
    expect(verilogStructureScore(String(adder.answer), String(adder.answer))).toBe(1);
    // the statements as the authors read them: the header is an instance too, labels lose their size
    expect(verilogStatements(caseLong)).toEqual([
      'module m',
      'port input [1:0] s',
      'port output reg y',
      'wire  w',
      'reg  t',
      'always@(*)',
      'case(s)',
      'case_item d0',
      'case_item default',
      'instance module m',
      'instance begin case',
    ]);
  });

  it("matches like difflib's SequenceMatcher (longest run first), not a longest common subsequence", () => {
    // difflib: get_matching_blocks("qabxcdab", "abycdqab") = [(0, 5, 3)] → 3; an LCS would find 6
    expect(matchedStatements([...'qabxcdab'], [...'abycdqab'])).toBe(3);
    expect(matchedStatements([...'abxcd'], [...'abcd'])).toBe(4); // ratio 8/9, as difflib
    expect(matchedStatements([], [...'ab'])).toBe(0);
  });

  it('is a reward on the gold column', () => {
    const structure = verilogStructure();
    expect(structure(makeRewardInput({ completion: String(adder.wrong), row: adder }))).toBeCloseTo(0.8, 12);
    expect(() => structure(makeRewardInput({ completion: 'x', row: { gold: 'y' } }))).toThrow(
      /verilog-structure: dataset row has no string column "answer"/,
    );
  });
});

describe('verilog-format', () => {
  it("style think-answer (VeriReason's, the default): think, then an answer holding a verilog block", () => {
    const think = verilogFormat();
    const fmt = (completion: string) => think(makeRewardInput({ completion, row: {} }));
    const block = '```verilog\n' + String(adder.answer) + '\n```';
    expect(fmt(`<think>a+b</think>\n<answer>\n${block}\n</answer>`)).toBe(1);
    expect(fmt(`Sure. <think>a+b</think><answer>${block}</answer> done`)).toBe(1); // anywhere in the text
    expect(fmt(`<think>x</think> oops </think>\n<answer>${block}</answer>`)).toBe(1); // a later </think> may start it
    expect(fmt(`<answer>${block}</answer>`)).toBe(0); // no think
    expect(fmt(`<think>a+b</think> so: <answer>${block}</answer>`)).toBe(0); // text between think and answer
    expect(fmt(`<think>a+b</think><answer>\n\`\`\`\n${String(adder.answer)}\n\`\`\`\n</answer>`)).toBe(0); // block not tagged verilog
    expect(fmt(`<think>a+b</think><answer>${block}`)).toBe(0); // no </answer>
    expect(fmt(`<think>a+b</think><answer>\`\`\`verilog\n${String(adder.answer)}</answer>`)).toBe(0); // block not closed
  });

  const fmt = (completion: string) => format(makeRewardInput({ completion, row: adder }));
  it('style module: 1 for exactly one module with the spec name and ports, 0 for near misses', () => {
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
