/**
 * The page bundle's stand-in for src/tensor/garbage.ts: a page cannot ask V8 for a full collection
 * (no --expose-gc, no node:v8), so the browser's own schedule frees a micro-batch's graph.
 */
import type * as NodeGarbage from '../tensor/garbage.js';

export const releaseGarbage: typeof NodeGarbage.releaseGarbage = () => false;
