/**
 * VeriReason's structural heuristic (#1): how close a Verilog design's structure is to the golden
 * (reference) module, in [0, 1], without simulating either. Read from the authors' reward,
 * github.com/NellyW8/VeriReason `GRPO/verilog_rewards_tb.py` (`run_ast_comparison`, commit d215b7f);
 * this is our own implementation of the same definition:
 *
 *   statements(code) = the code's structural lines, in order (see {@link verilogStatements})
 *   ratio      = 2·M / (|S_design| + |S_gold|), M = matched statements of difflib's
 *                SequenceMatcher (Ratcliff/Obershelp: longest common run, then recurse either side)
 *   coverage   = |set(S_design) ∩ set(S_gold)| / |set(S_gold)|      (0 when the gold has none)
 *   redundancy = |set(S_design) − set(S_gold)| / |set(S_design)|    (1 when the design has none)
 *   score      = clamp(0.7·ratio + 0.3·coverage − 0.2·redundancy, 0, 1)
 *
 * The statements are read as the authors' patterns read them, quirks included (a module header
 * also counts as an instance, one `else` scan swallows the next `else`, no word boundaries), so
 * that the scores agree with theirs: the tests check numbers their function printed. Left out:
 * difflib's "autojunk" rule, which only acts on 200 or more statements.
 *
 * Is not: a parser or an equivalence check; two designs that behave alike can score low.
 */

/** Verilog text without `//` and `/* *\/` comments. */
export function stripVerilogComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}

const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
// The authors' patterns end a block's scan at a keyword or at the end of the text; Python's `$`
// also matches before one final newline.
const END = String.raw`\n?$`;

/**
 * The structural statements VeriReason compares, in its order: `module NAME` and one `port …` per
 * header entry (first `module NAME (...);` only); `input|output|inout|wire|reg WIDTH NAME` for
 * `KIND [w] NAME;`; `assign LHS = RHS` (one line); per `always @(...)` block up to the next
 * `always`/`endmodule`: `always@(…)`, its `if(…)`s, its `else`s, its `case(…)`s with a `case_item`
 * per label; last `instance TYPE NAME` for every `WORD WORD (...);` — the module header included,
 * as in the authors' code. Patterns match inside words (no word boundaries) and parentheses are
 * not balanced (the first `)` ends a condition), as theirs do, so that scores agree with theirs.
 */
export function verilogStatements(code: string): string[] {
  const text = code.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, '');
  const statements: string[] = [];
  const header = /module\s+(\w+)\s*\(([\s\S]*?)\);/.exec(text);
  if (header) {
    statements.push(`module ${header[1]}`);
    for (const port of squash(header[2]!).split(',')) statements.push(`port ${port.trim()}`);
  }
  for (const kind of ['input', 'output', 'inout', 'wire', 'reg'])
    for (const match of text.matchAll(new RegExp(String.raw`${kind}\s+(\[.*?\])?\s*(\w+)\s*;`, 'g')))
      statements.push(`${kind} ${match[1] ?? ''} ${match[2]}`);
  for (const match of text.matchAll(/assign\s+(\w+)\s*=\s*(.*?);/g))
    statements.push(`assign ${match[1]} = ${squash(match[2]!)}`);
  const always = new RegExp(String.raw`always\s*@\s*\(([\s\S]*?)\)([\s\S]*?)(?=always|endmodule|${END})`, 'g');
  for (const [, sensitivity, body] of text.matchAll(always)) {
    statements.push(`always@(${squash(sensitivity!)})`);
    // each `if` and `else` scan runs on to the next `else`/`end` (or the end), as the authors' do,
    // so an `if` or `else` inside that stretch is not counted again
    for (const match of body!.matchAll(new RegExp(String.raw`if\s*\(([\s\S]*?)\)[\s\S]*?(?=else|end|${END})`, 'g')))
      statements.push(`if(${squash(match[1]!)})`);
    for (const _ of body!.matchAll(new RegExp(String.raw`else[\s\S]*?(?=end|${END})`, 'g'))) statements.push('else');
    for (const [, selector, items] of body!.matchAll(/case\s*\(([\s\S]*?)\)([\s\S]*?)endcase/g)) {
      statements.push(`case(${squash(selector!)})`);
      const item = new RegExp(String.raw`(\w+|default)\s*:[\s\S]*?(?=\w+\s*:|default\s*:|endcase|${END})`, 'g');
      for (const match of items!.matchAll(item)) statements.push(`case_item ${match[1]}`);
    }
  }
  for (const match of text.matchAll(/(\w+)\s+(\w+)\s*\(([\s\S]*?)\);/g))
    statements.push(`instance ${match[1]} ${match[2]}`);
  return statements;
}

/** Statements matched by Ratcliff/Obershelp (difflib's SequenceMatcher without junk): the M of its ratio. */
export function matchedStatements(a: readonly string[], b: readonly string[]): number {
  let matched = 0;
  const ranges: Array<[number, number, number, number]> = [[0, a.length, 0, b.length]];
  while (ranges.length) {
    const [aLow, aHigh, bLow, bHigh] = ranges.pop()!;
    // longest common run; of the longest, the one starting earliest in a, then in b (as difflib)
    let best = 0;
    let bestA = aLow;
    let bestB = bLow;
    let previous = new Map<number, number>();
    for (let i = aLow; i < aHigh; i++) {
      const current = new Map<number, number>();
      for (let j = bLow; j < bHigh; j++) {
        if (a[i] !== b[j]) continue;
        const length = (previous.get(j - 1) ?? 0) + 1;
        current.set(j, length);
        if (length > best) [best, bestA, bestB] = [length, i - length + 1, j - length + 1];
      }
      previous = current;
    }
    if (best === 0) continue;
    matched += best;
    ranges.push([aLow, bestA, bLow, bestB], [bestA + best, aHigh, bestB + best, bHigh]);
  }
  return matched;
}

/** VeriReason's structure score of `design` against `gold`, in [0, 1] (formula in the file header). */
export function verilogStructureScore(design: string, gold: string): number {
  const mine = verilogStatements(design);
  const theirs = verilogStatements(gold);
  const total = mine.length + theirs.length;
  const ratio = total === 0 ? 1 : (2 * matchedStatements(mine, theirs)) / total;
  const mineSet = new Set(mine);
  const goldSet = new Set(theirs);
  const shared = [...mineSet].filter((statement) => goldSet.has(statement)).length;
  const coverage = goldSet.size ? shared / goldSet.size : 0;
  const redundancy = mineSet.size ? (mineSet.size - shared) / mineSet.size : 1;
  return Math.min(1, Math.max(0, 0.7 * ratio + 0.3 * coverage - 0.2 * redundancy));
}
