/**
 * The option pieces several parts share (ε, the std convention, clip widths, the per-token loss
 * options, turn discounting), and `parsePartOptions`, which checks a config's options against a
 * part's own strict zod schema: an unknown key is an error that lists the known ones.
 *
 * Is: shared schema fragments and the parser. Each part's own schema sits in the part's file, in
 * its entry (`options`), so a new part brings its options with it.
 * Is not: the defaults' source of truth — each function documents and applies its own defaults;
 * the schemas only check names, types and ranges before any compute.
 */
import { z } from 'zod';

export const epsilonOption = z.number().nonnegative().describe('added to the standard deviation before dividing');
export const stdOption = z.enum(['sample', 'population']).describe("'sample' (N−1) or 'population' (N)");
export const singletonGroupOption = z
  .enum(['raw', 'zero'])
  .describe("a group with one scored sample: 'raw' (A = r) or 'zero'");
export const unitAlphaOption = z.number().min(0).max(1);

export const clipLowOption = z.number().min(0).max(1);
export const clipHighOption = z.number().nonnegative();
export const clipBoundsOption = z.tuple([z.number().nonnegative(), z.number().nonnegative()]);
/** Options every per-token loss accepts on top of its own (the trainer applies them around any surrogate). */
export const commonLossOptions = {
  topEntropyQuantile: z.number().gt(0).max(1).optional().describe('keep only tokens in the top entropy quantile'),
  klOffPolicyCorrection: z.boolean().optional().describe('multiply the KL term by π_θ/π_old (DeepSeek-V3.2)'),
};

export const gammaOption = z.number().min(0).max(1).describe('the discount γ over later turns');
export const turnNormalizationOption = z
  .enum(['mean-std', 'mean'])
  .describe("'mean-std' ((x − mean)/(std + 1e-6)) or 'mean' (x − mean, F_norm = 1)");

/**
 * Parses `options` with a part's schema; every problem is one line naming `field.key`, and an
 * unknown key lists the keys the part knows.
 */
export function parsePartOptions<T>(schema: z.ZodType<T>, options: unknown, field: string, part: string): T {
  const parsed = schema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  const known = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  const lines = parsed.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return `${field}: ${part} has no option ${issue.keys.map((key) => `"${key}"`).join(', ')}; known: ${known.join(', ') || '(none)'}`;
    }
    const where = [field, ...issue.path.map(String)].join('.');
    if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
      const description =
        schema instanceof z.ZodObject
          ? (schema.shape[String(issue.path[0])] as z.ZodType | undefined)?.description
          : undefined;
      return `${where}: ${part} needs this option${description ? ` (${description})` : ''}`;
    }
    return `${where}: ${issue.message} (for ${part})`;
  });
  throw new Error(lines.join('\n'));
}
