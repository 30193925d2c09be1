/**
 * The `grpo` command: argv → typed options → the library. Each subcommand maps its flags 1:1 to
 * options of a function in this folder or a layer below; there is no logic of its own here.
 * Is not: a place for defaults — those live in the config schema and the functions it calls.
 */
import { Command, InvalidArgumentError } from 'commander';
import { runListCommand } from './list-command.js';
import { BATCHER_DEFAULTS } from '../serve/serve-batcher.js';
import { SERVE_LIMIT_DEFAULTS } from '../serve/serve-limits.js';
import { runGenerateCommand, runMergeCommand, runScoreCommand } from './model-commands.js';
import { runRewardCommand } from './reward-command.js';
import { runTrainCommand, type DataFlags } from './train-command.js';
import { runEvalCommand } from './eval-command.js';
import { addFlowCommands } from './flow-command.js';

const integer = (value: string): number => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new InvalidArgumentError(`"${value}" is not an integer`);
  return parsed;
};
/**
 * An integer flag within [minimum, maximum]; commander's error names the flag. The upper bounds
 * match the config schema's (src/config/config.ts), so "1e8" is refused here, not inside an allocation.
 */
const integerFrom =
  (minimum: number, maximum: number) =>
  (value: string): number => {
    const parsed = Number(value);
    if (value.trim() === '' || !Number.isInteger(parsed) || parsed < minimum || parsed > maximum) {
      throw new InvalidArgumentError(`must be an integer from ${minimum} to ${maximum}, got "${value}"`);
    }
    return parsed;
  };
/** A finite number flag above `exclusiveMinimum` (or from `minimum`) and at most `maximum`. */
const numberFrom =
  (bounds: { minimum?: number; exclusiveMinimum?: number; maximum: number }) =>
  (value: string): number => {
    const parsed = Number(value);
    const low = bounds.exclusiveMinimum ?? bounds.minimum ?? -Infinity;
    const aboveLow = bounds.exclusiveMinimum !== undefined ? parsed > low : parsed >= low;
    if (value.trim() === '' || !Number.isFinite(parsed) || !aboveLow || parsed > bounds.maximum) {
      const range = bounds.exclusiveMinimum !== undefined ? `above ${low}` : `from ${low}`;
      throw new InvalidArgumentError(`must be a number ${range} to ${bounds.maximum}, got "${value}"`);
    }
    return parsed;
  };
const maxNewTokens = integerFrom(1, 32768);
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The data and model flags of train/sft, as `runTrainCommand` takes them. */
function dataFlagsOf(options: Record<string, unknown>): DataFlags {
  return {
    model: options.model as string | undefined,
    data: options.data as string | undefined,
    evalData: options.evalData as string | undefined,
    evalSplit: options.evalSplit as number | undefined,
    promptColumn: options.promptColumn as string | undefined,
    answerColumn: options.answerColumn as string | undefined,
    systemPrompt: options.systemPrompt as string | undefined,
    promptTemplate: options.promptTemplate as string | undefined,
    rewards: options.reward as string[] | undefined,
    chatTemplate: options.chatTemplate as string | undefined,
  };
}

/** --lora-rank N as the `--set lora.rank=N` it stands for, placed first so an explicit --set still wins. */
function setWithLoraRank(options: Record<string, unknown>): string[] {
  const rank = options.loraRank === undefined ? [] : [`lora.rank=${options.loraRank as number}`];
  return [...rank, ...((options.set as string[] | undefined) ?? [])];
}

export function buildProgram(): Command {
  const program = new Command('grpo')
    .description(
      'Reinforcement-learning fine-tuning (GRPO and its family) of language models on a CPU, with TypeScript rewards.',
    )
    .showHelpAfterError();

  const trainOptions = (command: Command) =>
    command
      .argument(
        '[recipe]',
        'a recipe: .ts/.js file exporting { config, rewards? }, or a .json/.yaml config (default: the built-in addition run)',
      )
      .option(
        '--set <key=value>',
        'override a config field, e.g. --set grpo.steps=50 (repeatable; values parsed as JSON; an object value replaces what was at its path, it is not merged)',
        collect,
      )
      .option('--preset <name>', 'algorithm preset: grpo, dr-grpo, dapo, gspo, cispo, rloo')
      .option('--resume <runDirectory>', 'continue a run from its last complete checkpoint')
      .option(
        '--restart-damaged',
        'with --resume: when every checkpoint is damaged, start the run over from step 0 (empties its logs) instead of stopping',
      )
      .option('--run-name <name>', 'name of the run folder under logging.runsDirectory')
      .option('--quiet', 'no progress output')
      .option('--model <directory>', 'a Hugging Face checkpoint folder (= --set model.checkpoint=DIR)')
      .option(
        '--data <file>',
        'train on a dataset file: .jsonl/.json/.csv/.tsv/.parquet, .gz accepted, TRL formats (= --set task=dataset --set taskOptions.trainFile=FILE)',
      )
      .option('--eval-data <file>', 'held-out dataset file (= taskOptions.evalFile)')
      .option(
        '--eval-split <fraction>',
        'hold out this fraction of --data instead (= taskOptions.evalFraction, default 0.1)',
        numberFrom({ exclusiveMinimum: 0, maximum: 0.99 }),
      )
      .option('--prompt-column <column>', 'column holding the prompt (= taskOptions.promptColumn)')
      .option('--answer-column <column>', 'column holding the reference answer (= taskOptions.answerColumn)')
      .option('--system-prompt <text>', 'system prompt for every row (= taskOptions.systemPrompt)')
      .option(
        '--prompt-template <template>',
        'prompt built from row fields, e.g. "Solve: {question}" (= taskOptions.promptTemplate)',
      )
      .option(
        '--reward <name[:weight][:json]>',
        'a reward by name (grpo list), weight default 1, options as a JSON object, e.g. --reward \'regex:0.5:{"pattern":"^A"}\' (repeatable; = taskOptions.rewards with --data, else rewards)',
        collect,
      )
      .option(
        '--chat-template <auto|none|file>',
        "prompt format: the checkpoint's chat template (auto), plain text (none), or a .jinja file (= model.chatTemplate)",
      )
      .option(
        '--lora-rank <n>',
        'train LoRA adapters of this rank instead of every weight (= --set lora.rank=N; 1 to 4096)',
        integerFrom(1, 4096),
      );
  trainOptions(program.command('train'))
    .description(
      'SFT warm start (if configured) then GRPO; writes runs/<id>/ with metrics, samples, checkpoints, summary',
    )
    .action(async (recipe: string | undefined, options) => {
      process.exitCode = await runTrainCommand({
        recipe,
        set: setWithLoraRank(options),
        preset: options.preset,
        resume: options.resume,
        restartDamaged: options.restartDamaged,
        runName: options.runName,
        quiet: options.quiet,
        data: dataFlagsOf(options),
      });
    });
  trainOptions(program.command('sft'))
    .description('only the supervised phase of a recipe (completion-only cross-entropy)')
    .action(async (recipe: string | undefined, options) => {
      process.exitCode = await runTrainCommand({
        recipe,
        set: setWithLoraRank(options),
        resume: options.resume,
        restartDamaged: options.restartDamaged,
        runName: options.runName,
        quiet: options.quiet,
        sftOnly: true,
        data: dataFlagsOf(options),
      });
    });

  program
    .command('eval')
    .description('held-out accuracy (greedy pass@1, sampled pass@k) of a checkpoint on a built-in task')
    .requiredOption('--model <directory>', 'checkpoint folder (HF layout)')
    .option(
      '--adapter <directory>',
      'a PEFT LoRA adapter folder applied on top of --model (e.g. a LoRA run checkpoint)',
    )
    .option('--task <name>', "built-in task (default: the recipe's, else addition)")
    .option(
      '--recipe <file>',
      "a recipe (.ts/.js/.json/.yaml): its task unless --task or --data, and its rewards (code rewards, else its config's)",
    )
    .option(
      '--data <file>',
      'evaluate on every row of a dataset file instead (needs --reward or a recipe with rewards)',
    )
    .option('--prompt-column <column>', 'column holding the prompt (with --data)')
    .option('--answer-column <column>', 'column holding the reference answer (with --data)')
    .option('--system-prompt <text>', 'system prompt for every row (with --data)')
    .option(
      '--reward <name[:weight][:json]>',
      'reward by name, e.g. --reward \'regex:1:{"pattern":"^A"}\' (repeatable); the first decides correctness (with --data)',
      collect,
    )
    .option(
      '--chat-template <auto|none|file>',
      "prompt format (default auto: the checkpoint's chat template when it has one)",
    )
    .option('--output <file>', 'JSONL file for the greedy completions (default runs/eval-<time>.jsonl)')
    .option('--examples <n>', 'held-out examples (1 to 100000)', integerFrom(1, 100_000), 200)
    .option('--pass-at-k <k>', 'also sample k completions per prompt (0 = off, at most 1024)', integerFrom(0, 1024), 0)
    .option('--max-new-tokens <n>', 'completion length limit (1 to 32768)', maxNewTokens, 8)
    .option('--seed <n>', 'seed', integer, 0)
    .option('--json', 'print JSON')
    .action(async (options) => {
      process.exitCode = await runEvalCommand({ ...options, rewards: options.reward });
    });

  program
    .command('generate')
    .description('sample completions from a checkpoint')
    .requiredOption('--model <directory>', 'checkpoint folder (HF layout)')
    .option(
      '--adapter <directory>',
      'a PEFT LoRA adapter folder applied on top of --model (e.g. a LoRA run checkpoint)',
    )
    .requiredOption('--prompt <text>', 'prompt text')
    .option('--chat', "wrap the prompt in the tokenizer's chat template as a user message")
    .option('--max-new-tokens <n>', 'tokens to generate at most (1 to 32768)', maxNewTokens, 64)
    .option('--temperature <t>', '0 = greedy', numberFrom({ minimum: 0, maximum: 100 }), 1)
    .option('--top-p <p>', 'nucleus sampling mass, above 0 to 1', numberFrom({ exclusiveMinimum: 0, maximum: 1 }), 1)
    .option('--top-k <k>', 'keep the k most likely tokens (0 = off)', integerFrom(0, 2 ** 21), 0)
    .option('--seed <n>', 'sampling seed', integer, 0)
    .option('--num-samples <g>', 'completions for the prompt (1 to 1024)', integerFrom(1, 1024), 1)
    .option('--json', 'one JSON line per sample with ids, text and logprobs')
    .action((options) => runGenerateCommand(options));

  program
    .command('score')
    .description('per-token log-probabilities, mean NLL and perplexity of a text under a checkpoint')
    .requiredOption('--model <directory>', 'checkpoint folder (HF layout)')
    .option(
      '--adapter <directory>',
      'a PEFT LoRA adapter folder applied on top of --model (e.g. a LoRA run checkpoint)',
    )
    .option('--text <text>', 'text to score (BOS added as the tokenizer config says)')
    .option('--ids <ids>', 'comma-separated token ids to score')
    .option('--json', 'print JSON')
    .action((options) => runScoreCommand(options));

  program
    .command('serve')
    .description(
      'serve a checkpoint (and LoRA adapters) behind an OpenAI-compatible API: /v1/completions, /v1/chat/completions, /v1/models, /v1/load_lora_adapter',
    )
    .requiredOption('--model <directory>', 'checkpoint folder (HF layout)')
    .option(
      '--adapter <directory>',
      'a PEFT LoRA adapter folder, served under its folder name and used when a request names no model',
    )
    .option('--served-model-name <name>', "the base model's name in requests (default: the --model folder name)")
    .option(
      '--chat-template <file>',
      "a Jinja chat template file for /v1/chat/completions, in place of the tokenizer's (needed when the model has none)",
    )
    .option('--port <n>', 'port (0 = any free port)', integerFrom(0, 65535), 8000)
    .option('--host <address>', 'address to listen on (0.0.0.0 for every interface)', '127.0.0.1')
    .option(
      '--max-body-bytes <n>',
      `most bytes in a request body (default ${SERVE_LIMIT_DEFAULTS.maxBodyBytes})`,
      integerFrom(1, 2 ** 31 - 1),
    )
    .option(
      '--max-json-depth <n>',
      `most levels of nested JSON arrays/objects in a body (default ${SERVE_LIMIT_DEFAULTS.maxJsonDepth})`,
      integerFrom(3, 1000),
    )
    .option(
      '--max-prompts <n>',
      `most prompts per request (default ${SERVE_LIMIT_DEFAULTS.maxPrompts})`,
      integerFrom(1, 1e6),
    )
    .option(
      '--max-prompt-chars <n>',
      `most prompt characters per request, checked before tokenizing (default ${SERVE_LIMIT_DEFAULTS.maxPromptChars})`,
      integerFrom(1, 2 ** 31 - 1),
    )
    .option(
      '--max-prompt-tokens <n>',
      `most prompt tokens per request (default ${SERVE_LIMIT_DEFAULTS.maxPromptTokens})`,
      integerFrom(1, 2 ** 31 - 1),
    )
    .option(
      '--max-sequences <n>',
      `most sequences (prompts × n) per decode batch and so per request (default ${BATCHER_DEFAULTS.maxSequences})`,
      integerFrom(1, 1e6),
    )
    .option(
      '--max-batch-tokens <n>',
      `most generated tokens (prompts × n × max_tokens) per decode batch and so per request (default ${BATCHER_DEFAULTS.maxBatchTokens})`,
      integerFrom(1, 2 ** 31 - 1),
    )
    .option(
      '--max-kv-cache-mb <n>',
      `most MiB of KV cache held by every decoding batch together; a request needing more alone is refused, one that does not fit beside the running batches waits (default ${BATCHER_DEFAULTS.maxKvCacheBytes / 1024 ** 2})`,
      integerFrom(1, 2 ** 30),
    )
    .option(
      '--max-adapter-rank <r>',
      `largest LoRA rank an adapter may have (default ${SERVE_LIMIT_DEFAULTS.maxAdapterRank})`,
      integerFrom(1, 1e6),
    )
    .option(
      '--max-adapter-bytes <n>',
      `most bytes of an adapter's weights file and tensors (default ${SERVE_LIMIT_DEFAULTS.maxAdapterBytes})`,
      integerFrom(1, 2 ** 40),
    )
    .addHelpText(
      'after',
      `
Every request is checked against these bounds before the work they bound and refused with a 4xx
naming the field (docs/scaling-engines.md). Adapters loaded through /v1/load_lora_adapter must be
regular files inside their folder (no links out of it).`,
    )
    .action(async (options) => {
      const { runServeCommand } = await import('./serve-command.js');
      await runServeCommand({
        model: options.model,
        adapter: options.adapter,
        servedModelName: options.servedModelName,
        chatTemplate: options.chatTemplate,
        port: options.port,
        host: options.host,
        maxSequences: options.maxSequences,
        maxBatchTokens: options.maxBatchTokens,
        maxKvCacheBytes: options.maxKvCacheMb === undefined ? undefined : options.maxKvCacheMb * 1024 ** 2,
        limits: {
          maxBodyBytes: options.maxBodyBytes,
          maxJsonDepth: options.maxJsonDepth,
          maxPrompts: options.maxPrompts,
          maxPromptChars: options.maxPromptChars,
          maxPromptTokens: options.maxPromptTokens,
          maxAdapterRank: options.maxAdapterRank,
          maxAdapterBytes: options.maxAdapterBytes,
        },
      });
    });

  program
    .command('merge')
    .description('fold a LoRA adapter into its base weights and write a plain HF checkpoint')
    .requiredOption('--model <directory>', 'the base checkpoint folder (HF layout)')
    .requiredOption('--adapter <directory>', 'a PEFT LoRA adapter folder')
    .requiredOption('--out <directory>', 'folder to write the merged checkpoint to')
    .action((options) => runMergeCommand(options));

  program
    .command('reward')
    .description('run a built-in reward (or a recipe\'s rewards) over a JSONL file of {"completion", ...columns} rows')
    .argument('[name]', "reward name (see grpo list); with --recipe, one of the recipe's rewards (default: all)")
    .requiredOption('--input <file>', 'JSONL input')
    .option('--options <json>', 'reward options as JSON')
    .option('--recipe <file>', "score with a recipe's rewards: its code rewards, else its config's rewards")
    .action(async (name: string | undefined, options) => {
      process.exitCode = await runRewardCommand({
        name,
        input: options.input,
        options: options.options,
        recipe: options.recipe,
      });
    });

  program
    .command('serve-rewards')
    .description(
      'serve rewards over HTTP to Python trainers: OpenRLHF (--reward.remote_url), slime (--rm-url), verl (docs/scaling.md)',
    )
    .option('--recipe <file>', "a recipe: its code rewards, else its config's rewards, else its task's")
    .option(
      '--reward <name[:weight]>',
      'a reward by name (grpo list), weight default 1 (repeatable; = rewards in the config)',
      collect,
    )
    .option('--task <name>', 'a task whose rewards are served (its own when no --reward is given)')
    .option('--port <n>', 'port (0 = any free one; the address is printed on stdout)', integerFrom(0, 65535), 8000)
    .option('--host <address>', 'address to listen on (0.0.0.0 for other machines)', '127.0.0.1')
    .option(
      '--strip-suffix <text>',
      "cut this text from the end of each completion, e.g. '<|im_end|>' that OpenRLHF's query keeps (repeatable)",
      collect,
    )
    .option(
      '--reward-timeout-ms <ms>',
      'per reward call; a call past it is stopped (its worker thread terminated) and reported as a failed reward (default 30000)',
      integerFrom(1, 3_600_000),
    )
    .option('--reward-workers <n>', 'worker threads running the rewards (default 2)', integerFrom(1, 256))
    .option('--reward-memory-mb <mb>', 'heap limit of each reward worker (default 1024)', integerFrom(64, 1_000_000))
    .option(
      '--max-body-bytes <n>',
      `most bytes in a request body (default ${64 * 1024 * 1024})`,
      integerFrom(1, 2 ** 31 - 1),
    )
    .option(
      '--max-json-depth <n>',
      'most levels of nested JSON arrays/objects in a body (default 64)',
      integerFrom(3, 1000),
    )
    .addHelpText(
      'after',
      `
POST /get_reward (or /) with OpenRLHF's {"query": [...], "prompts": [...], "labels": [...]}
  -> {"rewards": [...], "scores": [...], "extra_logs": {"reward/<name>": [...]}, "errors": [...]}
or slime's {"prompt": ..., "response": "...", "label": ...} -> the reward as a JSON number.
A failed reward is never 0: null in "rewards" (OpenRLHF) or HTTP 500 (slime), with the reason.
Rewards run in worker threads: a call past --reward-timeout-ms is stopped and fails as "timeout";
one request never holds more than all but one worker, so other clients keep being served.
verl: scripts/verl_compute_score.py (custom_reward_function.path / name=compute_score).`,
    )
    .action(async (options) => {
      const { runServeRewardsCommand } = await import('./serve-rewards-command.js');
      process.exitCode = await runServeRewardsCommand({
        recipe: options.recipe,
        rewards: options.reward,
        task: options.task,
        port: options.port,
        host: options.host,
        stripSuffixes: options.stripSuffix,
        rewardTimeoutMs: options.rewardTimeoutMs,
        rewardWorkers: options.rewardWorkers,
        rewardMemoryMb: options.rewardMemoryMb,
        maxBodyBytes: options.maxBodyBytes,
        maxJsonDepth: options.maxJsonDepth,
      });
    });

  program
    .command('list')
    .description(
      'every registered advantage estimator, policy loss, aggregation, KL estimator, filter, reward, task and preset',
    )
    .option('--recipe <file>', "also list the recipe's own parts (its `parts`: losses, estimators, image rewards, …)")
    .action(async (options: { recipe?: string }) => {
      if (options.recipe) await (await import('./recipe-file.js')).loadRecipe(options.recipe); // registers its parts
      const { runCatalogCommand } = await import('./catalog-command.js');
      process.stdout.write(`${runListCommand()}\n${runCatalogCommand()}`);
    });

  program
    .command('config')
    .description('print every config field with its type, default and description (docs/configuration.md)')
    .action(async () => {
      const { configReferenceMarkdown } = await import('../config/config-docs.js');
      process.stdout.write(configReferenceMarkdown());
    });

  addFlowCommands(program);

  program
    .command('web')
    .description(
      'serve a page that trains GRPO in a browser tab: the addition task, or a model folder picked from disk with a typed reward (docs/browser.md)',
    )
    .option('--port <n>', 'port (0 = any free port)', integerFrom(0, 65535), 6070)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--out <directory>', 'write the built page to this folder (for any static host) instead of serving it')
    .action(async (options) => {
      const { runWebCommand } = await import('../web/server.js');
      await runWebCommand({ port: options.port, host: options.host, out: options.out });
    });

  program
    .command('dashboard')
    .description('serve a read-only local web viewer of run folders')
    .option('--runs <directory>', 'folder holding run folders', 'runs')
    .option('--port <n>', 'port (default 6060)', integer)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .action(async (options) => {
      const { runDashboardCommand } = await import('../dashboard/server.js');
      await runDashboardCommand({ runs: options.runs, port: options.port, host: options.host });
    });
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    process.stderr.write(`grpo: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
