/**
 * SFT→RL for vulnerability detection (#174, "From SFT to RL: Demystifying the Post-Training Pipeline
 * for LLM-based Vulnerability Detection", the authors' OpenVul): GRPO on a "HAS_VUL or NO_VUL?"
 * question about a C function, after an SFT stage, with the paper's reward levels. Run:
 *
 *   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JUDGE_MODEL=NAME npx grpo train recipes/papers/openvul.ts
 *   OPENVUL_LEVEL=detection npx grpo train recipes/papers/openvul.ts     # no judge needed
 *
 * `OPENVUL_LEVEL` picks the reward (default `specification`, the authors' grpo.sh `--level`); each
 * level is the authors' reward function (youpengl/OpenVul trl/scripts/grpo.py and grpo_utils.py,
 * Apache-2.0), summed with weight 1 per component and no group-std scaling, as their
 * `--reward_weights 1.0 1.0 1.0 1.0 --scale_rewards none`:
 *   - every level: format 0 when the completion has `<think>` and `</think>` and the text after the
 *     last `</think>` holds exactly one of HAS_VUL / NO_VUL, else −0.2;
 *   - `detection`: correctness +1 when that text holds the right verdict, else −1 (−1 without both tags);
 *   - `prediction`: a vulnerable row earns +1 when a `CWE-n` after `</think>` is the row's CWE or one
 *     of its direct parents/children (their `cwe_map`), else −1; a patched row earns 0 when the text
 *     says NO_VUL or names none of those CWEs, else −1;
 *   - `specification` (the paper's fine-grained root-cause reward): a judge LLM reads the row's
 *     checklist (what the verdict, the evidence and the reasoning should be) and the completion, with
 *     the authors' prompt, and rates prediction, localization and reasoning. A vulnerable row earns
 *     prediction ±0.4, localization 0.2 / 0.1 / 0 and reasoning 0.4 / 0.2 / 0 (CORRECT / PARTIALLY
 *     CORRECT / INCORRECT); a patched row earns prediction 0 / −0.4 and nothing else. A judge reply
 *     that is not JSON goes once to their JSON "calibrator" prompt; still unparsed, or the endpoint
 *     failing every attempt, scores every dimension INCORRECT, as theirs.
 * A completion cut at the token limit is their "repetition" case: every dimension INCORRECT.
 * Their GRPO setting that transfers: 8 samples per prompt, KL β 0, no std scaling, grad-norm clip 0.5.
 *
 * Not the same: their data are real C/C++ functions from CVE patches (vulnerable and patched
 * versions of each) with checklists written by an LLM; here the rows are five generated bug
 * patterns (CWE-787, -125, -476, -416, -190), each as a vulnerable function and its fix, with the
 * checklist written from the pattern. Their `cwe_map` is MITRE's whole hierarchy; here a short map
 * of these five. The row says whether it is vulnerable (`vulnerable`), where theirs reads it from
 * the key's `_vul` suffix. Their judge (gpt-oss-120b, reasoning effort high) is any OpenAI-compatible
 * chat endpoint here, its system prompt sent as `system` (theirs `developer`); the three judged
 * dimensions are one logged reward (one judge call), theirs three columns of weight 1: the same
 * sum. Their reasoning level (a judge against the CVE description and patch) is not here. The model
 * is a small character model from scratch whose SFT teacher states a coin-flip verdict
 * (`TEACHER_ERROR_RATE`), so GRPO has the verdict to learn (paper: Qwen3-4B after rejection-sampled SFT).
 * Measured at `OPENVUL_LEVEL=detection`, seed 0, as written: held-out accuracy 44.0% after SFT and
 * 57.0% after 100 GRPO steps (100 rows; 44, 45, 52, 36, 57% every 25 steps), a noisy rise rather
 * than a clear one (docs/paper-recipes.md, "Measured").
 */
import {
  chatCompletion,
  generatedSplit,
  type Example,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
} from '../../src/index.js';

/** The reward levels of the authors' `--level`. */
export const OPENVUL_LEVELS = ['detection', 'prediction', 'specification'] as const;
export type OpenVulLevel = (typeof OPENVUL_LEVELS)[number];

/**
 * Share of SFT demonstrations whose verdict is the wrong one: a coin flip, so SFT teaches the format,
 * the evidence and the reasoning, and GRPO the verdict (at 0.3 the SFT model was already 100% right).
 */
const TEACHER_ERROR_RATE = 0.5;
const QUESTION = '\nHAS_VUL or NO_VUL?';

/** Direct parents and children of each CWE here (MITRE CWE-1000), standing in for their `cwe_map`. */
export const RELATED_CWES: Readonly<Record<string, readonly string[]>> = {
  'CWE-787': ['CWE-119', 'CWE-121', 'CWE-122'],
  'CWE-125': ['CWE-119', 'CWE-126', 'CWE-127'],
  'CWE-476': ['CWE-754'],
  'CWE-416': ['CWE-825', 'CWE-672'],
  'CWE-190': ['CWE-682', 'CWE-128'],
};

/** One bug pattern: the vulnerable and the fixed function, and the checklist of each. */
interface Pattern {
  cwe: string;
  vulnerable: (name: string, size: number) => { code: string; evidence: string; reasoning: string };
  fixed: (name: string, size: number) => { code: string; evidence: string; reasoning: string };
}

const PATTERNS: readonly Pattern[] = [
  {
    cwe: 'CWE-787',
    vulnerable: (f, n) => ({
      code: `void ${f}(char *s){char b[${n}];strcpy(b,s);}`,
      evidence: 'strcpy(b,s)',
      reasoning: `strcpy copies s into the ${n}-byte buffer b with no length check, so a longer s writes past b`,
    }),
    fixed: (f, n) => ({
      code: `void ${f}(char *s){char b[${n}];strncpy(b,s,${n - 1});b[${n - 1}]=0;}`,
      evidence: `strncpy(b,s,${n - 1})`,
      reasoning: `the copy is bounded to ${n - 1} bytes and b is terminated, so it cannot write past b`,
    }),
  },
  {
    cwe: 'CWE-125',
    vulnerable: (f) => ({
      code: `int ${f}(int *a,int n){int t=0;for(int i=0;i<=n;i++)t+=a[i];return t;}`,
      evidence: 'i<=n',
      reasoning: 'the loop runs to i==n and reads a[n], one past the end of a',
    }),
    fixed: (f) => ({
      code: `int ${f}(int *a,int n){int t=0;for(int i=0;i<n;i++)t+=a[i];return t;}`,
      evidence: 'i<n',
      reasoning: 'the loop stops at n-1, so every read is inside a',
    }),
  },
  {
    cwe: 'CWE-476',
    vulnerable: (f, n) => ({
      code: `int ${f}(void){int *p=malloc(${n});p[0]=1;return p[0];}`,
      evidence: 'p[0]=1',
      reasoning: 'malloc may return NULL and p is written without a check, a NULL dereference',
    }),
    fixed: (f, n) => ({
      code: `int ${f}(void){int *p=malloc(${n});if(!p)return -1;p[0]=1;return p[0];}`,
      evidence: 'if(!p)return -1;',
      reasoning: 'the NULL check returns before p is used',
    }),
  },
  {
    cwe: 'CWE-416',
    vulnerable: (f) => ({
      code: `int ${f}(int *p){free(p);return p[0];}`,
      evidence: 'return p[0];',
      reasoning: 'p is read after free(p), a use after free',
    }),
    fixed: (f) => ({
      code: `int ${f}(int *p){int v=p[0];free(p);return v;}`,
      evidence: 'int v=p[0];',
      reasoning: 'the value is read before free(p) and p is not used after it',
    }),
  },
  {
    cwe: 'CWE-190',
    vulnerable: (f) => ({
      code: `void *${f}(int c,int z){return malloc(c*z);}`,
      evidence: 'malloc(c*z)',
      reasoning: 'c*z can overflow int, so malloc gets a small size and later writes overflow it',
    }),
    fixed: (f) => ({
      code: `void *${f}(int c,int z){if(z&&c>INT_MAX/z)return 0;return malloc(c*z);}`,
      evidence: 'if(z&&c>INT_MAX/z)return 0;',
      reasoning: 'the check refuses any c*z above INT_MAX, so the product cannot overflow',
    }),
  },
];

const NAMES = ['copy', 'read', 'load', 'sum', 'init', 'get', 'put', 'make', 'parse', 'fill', 'scan', 'pack'];
const SIZES = [4, 8, 16, 32, 64];

/** One row: a pattern's vulnerable or fixed function with its checklist (their `generated_specification`). */
function vulnerabilityRow(pick: Pick): Example {
  const pattern = PATTERNS[pick(PATTERNS.length)]!;
  const vulnerable = pick(2) === 0;
  const name = NAMES[pick(NAMES.length)]!;
  const size = SIZES[pick(SIZES.length)]!;
  const side = (vulnerable ? pattern.vulnerable : pattern.fixed)(name, size);
  return {
    prompt: side.code + QUESTION,
    answer: vulnerable ? 'HAS_VUL' : 'NO_VUL',
    vulnerable,
    cwe: pattern.cwe,
    specification: {
      prediction: vulnerable
        ? `The code is vulnerable: ${pattern.cwe}`
        : `NO_VUL: the ${pattern.cwe} weakness is fixed`,
      localization: side.evidence,
      reasoning: side.reasoning,
    },
  };
}

/** The text after the last `</think>`, trimmed, when both tags are there; else null. */
const answerPart = (completion: string): string | null =>
  completion.includes('<think>') && completion.includes('</think>')
    ? completion.split('</think>').at(-1)!.trim()
    : null;

/** Their format check: both tags, and exactly one of HAS_VUL / NO_VUL after the last `</think>`. */
export function openvulFormatValid(completion: string): boolean {
  const answer = answerPart(completion);
  return answer !== null && answer.includes('HAS_VUL') !== answer.includes('NO_VUL');
}

function rowFacts(row: Readonly<Record<string, unknown>>): { vulnerable: boolean; cwe: string } {
  if (typeof row.vulnerable !== 'boolean') throw new Error('openvul: the row has no boolean column "vulnerable"');
  if (typeof row.cwe !== 'string') throw new Error('openvul: the row has no string column "cwe"');
  return { vulnerable: row.vulnerable, cwe: row.cwe };
}

/** Format component: 0 valid, −0.2 not. */
export const openvulFormat: RewardFn = ({ completion }) => (openvulFormatValid(completion) ? 0 : -0.2);

/** Detection level: +1 for the right verdict after `</think>`, else −1 (cut-off or untagged: −1). */
export const openvulDetection: RewardFn = ({ completion, row, truncated }) => {
  const { vulnerable } = rowFacts(row);
  const answer = answerPart(completion);
  if (truncated || answer === null) return -1;
  return (vulnerable ? answer.includes('HAS_VUL') : answer.includes('NO_VUL')) ? 1 : -1;
};

/** Prediction level: the CWE named after `</think>` (see the file header). */
export const openvulPrediction: RewardFn = ({ completion, row, truncated }) => {
  const { vulnerable, cwe } = rowFacts(row);
  const answer = answerPart(completion);
  if (truncated || answer === null) return -1;
  const accepted = new Set([cwe, ...(RELATED_CWES[cwe] ?? [])]);
  const named = (answer.match(/CWE-\d+/g) ?? []).some((id) => accepted.has(id));
  if (vulnerable) return named ? 1 : -1;
  return answer.includes('NO_VUL') || !named ? 0 : -1;
};

/** One judged dimension's option. */
export type JudgeOption = 'CORRECT' | 'PARTIALLY CORRECT' | 'INCORRECT';
/** The judge's verdict on the three dimensions. */
export type SpecificationVerdict = Record<'prediction' | 'localization' | 'reasoning', JudgeOption>;
const ALL_INCORRECT: SpecificationVerdict = {
  prediction: 'INCORRECT',
  localization: 'INCORRECT',
  reasoning: 'INCORRECT',
};

/** Their score of a verdict: vulnerable rows 0.4 / 0.2 / 0.4 at most, patched rows only −0.4 for a wrong prediction. */
export function specificationScore(verdict: SpecificationVerdict, vulnerable: boolean): number {
  if (!vulnerable) return verdict.prediction === 'CORRECT' ? 0 : -0.4;
  const graded = (option: JudgeOption, full: number) =>
    option === 'CORRECT' ? full : option === 'PARTIALLY CORRECT' ? full / 2 : 0;
  return (
    (verdict.prediction === 'CORRECT' ? 0.4 : -0.4) + graded(verdict.localization, 0.2) + graded(verdict.reasoning, 0.4)
  );
}

/** The completion as their judge sees it: `<think>…</think>` then `<answer>…</answer>`, tags repaired. */
export function judgedAnalysis(completion: string): string {
  const wrap = (text: string) =>
    `${text.split('</think>')[0]!.trim()}\n</think>\n<answer>\n${text.split('</think>').at(-1)!.trim()}\n</answer>`;
  if (completion.includes('<think>') && completion.includes('</think>')) return wrap(completion);
  const lastHas = completion.lastIndexOf('HAS_VUL');
  const lastNo = completion.lastIndexOf('NO_VUL');
  const answer = lastHas > lastNo ? 'HAS_VUL' : lastNo > lastHas ? 'NO_VUL' : '';
  if (completion.includes('</think>')) return wrap(`<think>\n${completion}`);
  if (completion.includes('<think>')) return `${completion}\n</think>\n<answer>\n${answer}\n</answer>`;
  return `<think>\n${completion}\n</think>\n<answer>\n${answer}\n</answer>`;
}

/** Their `construct_specification_level_judge_prompt` (grpo_utils.py), word for word. */
export function specificationPrompt(vulnerable: boolean, checklist: string, analysis: string): string {
  const output = `

\`\`\`json
{
    "prediction": {
        "justification": "<Your brief reason>",
        "option": <choose from ["CORRECT", "INCORRECT"]>
    },
    "localization": {
        "justification": "<Your brief reason>",
        "option": <choose from ["CORRECT", "PARTIALLY CORRECT", "INCORRECT"]>
    },
    "reasoning": {
        "justification": "<Your brief reason>",
        "option": <choose from ["CORRECT", "PARTIALLY CORRECT", "INCORRECT"]>
    }
}
\`\`\``;
  const partial =
    '* PARTIALLY CORRECT: The analysis cites the correct variable name or surrounding logic, but does not quote the specific snippet exactly. Or, it quotes a huge block of code that contains the snippet but lacks precision.';
  if (vulnerable)
    return `
1. GOAL:
Your task is to evaluate a vulnerability analysis for a code sample known to be HAS_VUL (vulnerable). Verify if the detector successfully identified the specific target vulnerability described in the Checklist.

2. SCORING RUBRIC:

Dimension 1: prediction
* CORRECT: The analysis identifies the specific vulnerability type requested in the checklist (e.g., "Buffer Overflow"). Ignore any extra/unrelated vulnerabilities listed by the detector. As long as the target is found, it is true.
* INCORRECT: The analysis fails to mention the target vulnerability type.

Dimension 2: localization
* CORRECT: The analysis quotes the exact code snippet (or a semantically identical variation) requested in the checklist.
${partial}
* INCORRECT: No specific evidence or incorrect code cited.

Dimension 3: reasoning
* CORRECT: The analysis correctly explains both the root cause (e.g., "missing check") and the consequence (e.g., "overflow").
* PARTIALLY CORRECT: Explains the general issue (e.g., "unsafe copy") but misses technical details.
* INCORRECT: Incorrect or generic reasoning.

3. INPUT:

The Ground Truth Checklist (Target: Vulnerable):

${checklist}

The Candidate Analysis:

${analysis}

4. OUTPUT FORMAT (JSON ONLY):${output}`;
  return `
1. GOAL:
Your task is to evaluate a vulnerability analysis for a code sample known to be NO_VUL (vulnerability fixed). Verify if the detector correctly concludes the code is safe regarding the specific vulnerability.

2. SCORING RUBRIC:

Dimension 1: prediction
* CORRECT: The analysis says "NO_VUL" or The analysis reports other vulnerabilities but does not list the specific fixed vulnerability mentioned in the checklist.
* INCORRECT: The analysis explicitly claims the specific target vulnerability (e.g., the one described in the checklist) still exists.

Dimension 2: localization
* CORRECT: The analysis quotes the exact safeguard code (e.g., the new check/sanitizer) requested in the checklist.
${partial}
* INCORRECT: No specific evidence or incorrect code cited.

Dimension 3: reasoning
* CORRECT: Explains why the code is safe (e.g., "The new check prevents the overflow").
* PARTIALLY CORRECT: Vague acknowledgment of safety without specific logic.
* INCORRECT: Incorrect logic or claims the code is unsafe.

3. INPUT:
The Ground Truth Checklist (Target: Safe/Fixed):

${checklist}

The Candidate Analysis:

${analysis}

4. OUTPUT FORMAT (JSON ONLY):${output}`;
}

const JUDGE_SYSTEM = 'You are to act as a meticulous and impartial Code Security Expert and Evaluator.';
const CALIBRATOR_SYSTEM = `You are a JSON format calibrator. Please extract the data from INPUT following the output template below. Please exclude the key "justification" and its value.

OUTPUT TEMPLATE
\`\`\`json
{
    "prediction": {
        "option": [extracted content],
    },
    "localization": {
        "option": [extracted content],
    },
    "reasoning": {
        "option": [extracted content],
    },
\`\`\``;

/** Their `str2json_specification`: the reply as JSON, else its ```json block; null when neither parses. */
export function parseSpecificationVerdict(reply: string): SpecificationVerdict | null {
  const candidates = [reply.trim(), reply.split('```json')[1]?.split('```')[0]?.trim()];
  for (const text of candidates) {
    if (text === undefined) continue;
    try {
      const parsed = JSON.parse(text) as Record<string, { option?: unknown } | undefined>;
      const option = (key: string): JudgeOption => {
        const value = parsed[key]?.option;
        return value === 'CORRECT' || value === 'PARTIALLY CORRECT' ? value : 'INCORRECT';
      };
      return { prediction: option('prediction'), localization: option('localization'), reasoning: option('reasoning') };
    } catch {
      // not JSON: try the next form, as their nested excepts do
    }
  }
  return null;
}

/** Sends one chat request (system, user) and returns the reply text. */
export type JudgeCall = (system: string, user: string, signal?: AbortSignal) => Promise<string>;

/** The judge on the OpenAI-compatible endpoint of `OPENAI_BASE_URL` / `JUDGE_MODEL` (temperature 0, as theirs). */
export const endpointJudge: JudgeCall = (system, user, signal) =>
  chatCompletion(
    [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    (reply) => reply,
    { maxAttempts: 3, maxTokens: 4096 },
    signal,
  );

/** Specification level: the judge's prediction / localization / reasoning, scored as theirs. */
export function openvulSpecification(judge: JudgeCall = endpointJudge): RewardFn {
  return async ({ completion, row, truncated, signal }) => {
    const { vulnerable } = rowFacts(row);
    if (truncated) return specificationScore(ALL_INCORRECT, vulnerable);
    const checklist = JSON.stringify(row.specification ?? {}, null, 2);
    const ask = async (system: string, user: string): Promise<string | null> => {
      try {
        return await judge(system, user, signal);
      } catch (error) {
        // Their analyzer returns "Error" after its retries and the row scores INCORRECT; a
        // misconfigured endpoint (no URL, an HTTP 4xx) still stops the run.
        if (error instanceof Error && error.message.startsWith('llmJudge: gave up')) return null;
        throw error;
      }
    };
    const reply = await ask(JUDGE_SYSTEM, specificationPrompt(vulnerable, checklist, judgedAnalysis(completion)));
    if (reply === null) return specificationScore(ALL_INCORRECT, vulnerable);
    let verdict = parseSpecificationVerdict(reply);
    if (verdict === null) {
      const calibrated = await ask(CALIBRATOR_SYSTEM, `INPUT\n${reply}`);
      verdict = calibrated === null ? null : parseSpecificationVerdict(calibrated);
    }
    return specificationScore(verdict ?? ALL_INCORRECT, vulnerable);
  };
}

/** The level named by `OPENVUL_LEVEL` (default specification); anything else is refused naming it. */
export function openvulLevel(value: string | undefined = process.env.OPENVUL_LEVEL): OpenVulLevel {
  const level = value ?? 'specification';
  if (!(OPENVUL_LEVELS as readonly string[]).includes(level))
    throw new Error(`recipes/papers/openvul.ts: OPENVUL_LEVEL=${level} is not one of ${OPENVUL_LEVELS.join(', ')}`);
  if (level === 'specification' && !process.env.OPENAI_BASE_URL)
    throw new Error(
      'recipes/papers/openvul.ts: the specification level needs a judge: set OPENAI_BASE_URL and JUDGE_MODEL, or OPENVUL_LEVEL=detection or prediction',
    );
  return level as OpenVulLevel;
}

const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('vulnerability-detection', count, seed, heldOut, vulnerabilityRow);

const verdictIsRight = (example: Example, completion: string) =>
  openvulFormatValid(completion) && answerPart(completion)!.includes(String(example.answer));

export const vulnerabilityTask: Task = {
  name: 'vulnerability-detection',
  description: 'OpenVul: is this C function vulnerable (HAS_VUL CWE-n) or patched (NO_VUL)?',
  alphabet: [
    ...new Set(
      PATTERNS.flatMap((pattern) =>
        NAMES.flatMap((name) => [pattern.vulnerable(name, 8), pattern.fixed(name, 8)]).flatMap((side) => [
          side.code,
          side.reasoning,
        ]),
      ).join('') + `${QUESTION}<think></think>HAS_VUL NO_VUL CWE-0123456789 :`,
    ),
  ].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const spec = example.specification as Record<string, string>;
    const vulnerable = draw() < TEACHER_ERROR_RATE ? !example.vulnerable : example.vulnerable;
    const thought = `<think>${spec.localization}: ${spec.reasoning}</think>`;
    return vulnerable ? `${thought}HAS_VUL ${String(example.cwe)}` : `${thought}NO_VUL`;
  },
  rewards: () => [],
  isCorrect: verdictIsRight,
};

/** The rewards of a level, each component with weight 1 (their `--reward_weights 1.0 …`). */
export function openvulRewards(level: OpenVulLevel, judge?: JudgeCall): Recipe['rewards'] {
  const main =
    level === 'detection' ? openvulDetection : level === 'prediction' ? openvulPrediction : openvulSpecification(judge);
  return [
    { name: `openvul-${level}`, reward: main, weight: 1 },
    { name: 'openvul-format', reward: openvulFormat, weight: 1 },
  ];
}

export default {
  config: {
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 300, batchSize: 32, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 160, temperature: 1 }, // num_generations 8
    grpo: { steps: 100, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-4 },
    algorithm: { advantage: 'dr-grpo', klCoefficient: 0 }, // scale_rewards none, beta 0
    optimizer: { maxGradNorm: 0.5 },
    evaluation: { examples: 100, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10 },
  },
  task: vulnerabilityTask,
  rewards: openvulRewards(openvulLevel()),
} satisfies Recipe;
