/**
 * Verilog generation from short specs, for VeriReason (#1) and VERIRL (#121): small generated
 * modules (adders, 2:1 muxes, parity, comparators, counters with synchronous reset), each with a
 * reference implementation and a self-checking testbench (`GRPO_CHECK`/`GRPO_DONE`, see
 * src/rewards/verilog.ts) whose expected values are computed here. The completion is the module.
 *
 * Why GRPO has work: the SFT teacher writes a plausible wrong module (carry dropped, select
 * inverted, top bit left out of the parity, ≥ for >, a counter that saturates) on
 * `teacherErrorRate` of its demonstrations; the testbench tells them apart, with partial credit.
 * Held out: every spec seed that hashes into one bucket of eight is never trained on.
 * Is not: VeriReason-RTL-Coder or VERIRL's data (no download here), or a benchmark of RTL skill.
 */
import { z } from 'zod';
import { verilogFormat, verilogTestbench } from '../../rewards/verilog.js';
import { makeRewardInput } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `verilogTask` accepts (config `taskOptions`); unknown keys are refused. */
export const verilogOptionsSchema = z
  .object({
    /** Fraction of SFT demonstrations that are a plausible wrong module (default 0.5). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

function hash(value: number): number {
  let h = Math.imul(value + 0x3c6ef372, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

const isHeldOut = (seed: number) => hash(seed) % 8 === 0;
const bus = (width: number) => (width > 1 ? `[${width - 1}:0] ` : '');
const lit = (width: number, value: number) => `${width}'d${value}`;

interface Spec {
  name: string;
  prompt: string;
  ports: string[];
  reference: string;
  wrong: string;
  testbench: string;
}

/** A combinational spec's testbench: drive the inputs, wait, check the output. */
function combinationalBench(
  name: string,
  inputs: Array<[string, number]>,
  output: [string, number],
  vectors: number[][],
  expected: (values: number[]) => number,
): string {
  const ports = [...inputs.map(([port]) => port), output[0]];
  const lines = [
    'module grpo_tb;',
    ...inputs.map(([port, width]) => `reg ${bus(width)}${port};`),
    `wire ${bus(output[1])}${output[0]};`,
    `${name} dut(${ports.map((port) => `.${port}(${port})`).join(',')});`,
    'initial begin',
    ...vectors.map(
      (values) =>
        `${inputs.map(([port, width], i) => `${port}=${lit(width, values[i]!)};`).join('')}#1 \`GRPO_CHECK(${output[0]}===${lit(output[1], expected(values))})`,
    ),
    '`GRPO_DONE',
    'end',
    'endmodule',
  ];
  return lines.join('\n') + '\n';
}

function spec(kind: number, pick: (n: number) => number): Spec {
  const vectors = (count: number, widths: number[]) =>
    Array.from({ length: count }, () => widths.map((width) => pick(2 ** width)));
  if (kind === 0) {
    const w = 2 + pick(3);
    const name = `add${w}`;
    const head = `module ${name}(input ${bus(w)}a,input ${bus(w)}b,output ${bus(w + 1)}y);`;
    return {
      name,
      prompt: `${name}: y=a+b, a b ${w} bits, y ${w + 1} bits\n`,
      ports: ['a', 'b', 'y'],
      reference: `${head}assign y=a+b;endmodule`,
      wrong: `${head}assign y=a^b;endmodule`,
      testbench: combinationalBench(
        name,
        [
          ['a', w],
          ['b', w],
        ],
        ['y', w + 1],
        vectors(8, [w, w]),
        ([a, b]) => a! + b!,
      ),
    };
  }
  if (kind === 1) {
    const w = 1 + pick(4);
    const name = `mux${w}`;
    const head = `module ${name}(input ${bus(w)}a,input ${bus(w)}b,input s,output ${bus(w)}y);`;
    return {
      name,
      prompt: `${name}: y=s?b:a, a b y ${w} bits\n`,
      ports: ['a', 'b', 's', 'y'],
      reference: `${head}assign y=s?b:a;endmodule`,
      wrong: `${head}assign y=s?a:b;endmodule`,
      testbench: combinationalBench(
        name,
        [
          ['a', w],
          ['b', w],
          ['s', 1],
        ],
        ['y', w],
        vectors(8, [w, w, 1]),
        ([a, b, s]) => (s ? b! : a!),
      ),
    };
  }
  if (kind === 2) {
    const w = 3 + pick(4);
    const name = `par${w}`;
    const head = `module ${name}(input ${bus(w)}d,output p);`;
    const parity = (d: number) =>
      d
        .toString(2)
        .split('')
        .filter((bit) => bit === '1').length % 2;
    return {
      name,
      prompt: `${name}: p=xor of d, d ${w} bits\n`,
      ports: ['d', 'p'],
      reference: `${head}assign p=^d;endmodule`,
      wrong: `${head}assign p=^d[${w - 2}:0];endmodule`,
      testbench: combinationalBench(name, [['d', w]], ['p', 1], vectors(8, [w]), ([d]) => parity(d!)),
    };
  }
  if (kind === 3) {
    const w = 2 + pick(3);
    const name = `gt${w}`;
    const head = `module ${name}(input ${bus(w)}a,input ${bus(w)}b,output y);`;
    const cases = vectors(6, [w, w]);
    const equal = pick(2 ** w);
    cases.push([equal, equal], [(equal + 1) % 2 ** w, (equal + 1) % 2 ** w]); // a tie always, so ≥ is caught
    return {
      name,
      prompt: `${name}: y=a>b unsigned, a b ${w} bits\n`,
      ports: ['a', 'b', 'y'],
      reference: `${head}assign y=a>b;endmodule`,
      wrong: `${head}assign y=a>=b;endmodule`,
      testbench: combinationalBench(
        name,
        [
          ['a', w],
          ['b', w],
        ],
        ['y', 1],
        cases,
        ([a, b]) => (a! > b! ? 1 : 0),
      ),
    };
  }
  const w = 2 + pick(2);
  const name = `cnt${w}`;
  const head = `module ${name}(input clk,input rst,output reg ${bus(w)}q);`;
  const top = 2 ** w - 1;
  const cycles = 2 ** w + 2; // wraps around once
  const lines = [
    'module grpo_tb;',
    'reg clk=0,rst=1;',
    `wire ${bus(w)}q;`,
    `${name} dut(.clk(clk),.rst(rst),.q(q));`,
    'initial begin',
    `#1 clk=1;#1 clk=0;rst=0;#1 \`GRPO_CHECK(q===${lit(w, 0)})`,
    ...Array.from({ length: cycles }, (_, k) => `#1 clk=1;#1 clk=0;#1 \`GRPO_CHECK(q===${lit(w, (k + 1) % 2 ** w)})`),
    '`GRPO_DONE',
    'end',
    'endmodule',
  ];
  return {
    name,
    prompt: `${name}: q counts up on clk, rst sync to 0, q ${w} bits\n`,
    ports: ['clk', 'rst', 'q'],
    reference: `${head}always @(posedge clk) if(rst) q<=0; else q<=q+1;endmodule`,
    wrong: `${head}always @(posedge clk) if(rst) q<=0; else if(q!=${top}) q<=q+1;endmodule`,
    testbench: lines.join('\n') + '\n',
  };
}

/** The example of one spec seed: its prompt, reference module, a wrong one, the testbench. */
export function verilogExample(seed: number): Example {
  let state = hash(seed) || 1;
  const pick = (n: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const made = spec(pick(5), pick);
  return {
    prompt: made.prompt,
    answer: made.reference,
    wrong: made.wrong,
    module: made.name,
    ports: made.ports.join(','),
    testbench: made.testbench,
    specSeed: seed,
  };
}

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const examples: Example[] = [];
  for (let specSeed = seed * 7919; examples.length < count; specSeed++)
    if (isHeldOut(specSeed) === heldOut) examples.push(verilogExample(specSeed));
  return examples;
}

/** The Verilog task; throws naming `taskOptions.<key>` for an unknown or ill-typed option, or when iverilog is absent. */
export function verilogTask(options: Record<string, unknown> = {}): Task {
  const errorRate = parseTaskOptions('verilog', verilogOptionsSchema, options).teacherErrorRate ?? 0.5;
  // The task's own rewards are the dense ones (passed / all checks, the module header); the
  // paper's tiered scoring is the recipe's choice (recipes/papers/verireason.ts).
  const testbench = verilogTestbench({ scoring: 'pass-fraction' });
  return {
    name: 'verilog',
    description:
      'small generated RTL specs → a Verilog module, testbench-simulation reward (VeriReason #1, VERIRL #121)',
    alphabet: [...new Set("abcdefghijklmnopqrstuvwxyz0123456789 ()[]:;,.=+-?^~<>@!|&'_\n")].join(''),
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration: (example, draw) => String(draw() < errorRate ? example.wrong : example.answer),
    rewards: () => [
      { name: 'testbench', reward: testbench, weight: 1 },
      { name: 'format', reward: verilogFormat({ style: 'module' }), weight: 0.2 },
    ],
    isCorrect: async (example, completion) => (await testbench(makeRewardInput({ completion, row: example }))) === 1,
  };
}
