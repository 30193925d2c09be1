/**
 * Public API of the nn layer: AdamW, learning-rate schedules, gradient clipping, and the seeded RNG
 * (which lives in tensor/ so ops tests can use it). Is not: model definitions (src/model).
 */
export { AdamW, type AdamWOptions, type AdamWState, type OptimizedParameter } from './optimizer.js';
export { learningRateAt, scheduleKinds, type ScheduleConfig } from './schedule.js';
export { clipGradNorm, globalGradNorm } from './clip.js';
export { Random, type RandomState } from '../tensor/random.js';
