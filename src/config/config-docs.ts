/**
 * The config reference, generated from the zod schema itself (field, type, default, description),
 * so docs/configuration.md and `grpo config` can never drift from what validation accepts.
 * Is not: validation (config.ts).
 */
import { checkpointDefaults } from './checkpoint-defaults.js';
import { trainerConfigSchema } from './config.js';

export interface ConfigField {
  path: string;
  type: string;
  defaultValue: string;
  description: string;
}

// zod 4 keeps the schema tree in `_zod.def`; only the wrappers this schema uses are unwrapped.
interface SchemaNode {
  description?: string;
  _zod: {
    def: {
      type: string;
      innerType?: SchemaNode;
      defaultValue?: unknown;
      shape?: Record<string, SchemaNode>;
      entries?: Record<string, string>;
      element?: SchemaNode;
    };
  };
  shape?: Record<string, SchemaNode>;
}

function describeType(node: SchemaNode): string {
  const def = node._zod.def;
  if (def.type === 'default' || def.type === 'optional' || def.type === 'nullable') {
    const inner = describeType(def.innerType!);
    return def.type === 'nullable' ? `${inner} | null` : inner;
  }
  if (def.type === 'enum')
    return Object.values(def.entries ?? {})
      .map((value) => `'${value}'`)
      .join(' | ');
  if (def.type === 'record') return 'object';
  if (def.type === 'array') return `${describeType(def.element!)}[]`;
  return def.type;
}

function defaultOf(node: SchemaNode): unknown {
  const def = node._zod.def;
  if (def.type === 'default') return typeof def.defaultValue === 'function' ? undefined : def.defaultValue;
  if (def.type === 'optional' || def.type === 'nullable') return defaultOf(def.innerType!);
  return undefined;
}

function objectShape(node: SchemaNode): Record<string, SchemaNode> | null {
  const def = node._zod.def;
  if (def.type === 'object') return node.shape ?? def.shape ?? null;
  if (def.innerType) return objectShape(def.innerType);
  return null;
}

/** Every leaf and section of the trainer config, in schema order. */
export function configFields(): ConfigField[] {
  const fields: ConfigField[] = [];
  const walk = (shape: Record<string, SchemaNode>, prefix: string): void => {
    for (const [key, node] of Object.entries(shape)) {
      const path = `${prefix}${key}`;
      const nested = objectShape(node);
      const value = defaultOf(node);
      fields.push({
        path,
        type: nested ? 'section' : describeType(node),
        defaultValue: nested || value === undefined ? '' : JSON.stringify(value),
        description: node.description ?? '',
      });
      if (nested) walk(nested, `${path}.`);
    }
  };
  walk((trainerConfigSchema as unknown as SchemaNode).shape!, '');
  return fields;
}

/** The rows of the checkpoint-defaults table: each field `checkpointDefaults` sets, its default there and without a checkpoint. */
function checkpointDefaultRows(): string[] {
  const schemaDefaults = new Map(configFields().map((field) => [field.path, field.defaultValue]));
  return Object.entries(checkpointDefaults).flatMap(([section, fields]) =>
    Object.entries(fields).map(([key, value]) => {
      const path = `${section}.${key}`;
      return `| \`${path}\` | \`${JSON.stringify(value)}\` | \`${schemaDefaults.get(path)}\` |`;
    }),
  );
}

/** The Markdown reference written to docs/configuration.md. */
export function configReferenceMarkdown(): string {
  const rows = configFields().map((field) =>
    field.type === 'section'
      ? `| **\`${field.path}\`** | | | ${field.description} |`
      : `| \`${field.path}\` | ${field.type.replace(/\|/g, '\\|')} | ${field.defaultValue ? `\`${field.defaultValue}\`` : ''} | ${field.description} |`,
  );
  return [
    '# Configuration reference',
    '',
    'Generated from the schema in `src/config/config.ts` (`npm run docs:config`; a test fails when this file is stale).',
    "Defaults shown are the schema's; a task's recommended settings (e.g. the addition task's SFT and GRPO",
    'schedule), then, with a `model.checkpoint`, the checkpoint defaults below, then a `preset` sit on top of',
    'them, and whatever a recipe or `--set` gives wins.',
    '',
    '| field | type | default | description |',
    '|---|---|---|---|',
    ...rows,
    '',
    '## With a checkpoint',
    '',
    "A run on a pretrained checkpoint (`model.checkpoint`, `--model DIR`, `GRPOTrainer({ model })`) starts from TRL's",
    '`GRPOConfig` defaults for these fields instead (`src/config/checkpoint-defaults.ts`; docs/coming-from-trl.md',
    'compares them with TRL and the built-in task). A field you set, in a recipe, `--set` or a preset, wins.',
    '',
    '| field | with a checkpoint | without |',
    '|---|---|---|',
    ...checkpointDefaultRows(),
    '',
  ].join('\n');
}
