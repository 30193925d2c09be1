/**
 * Test helpers exported as `grpo/testing`: finite-difference gradient checks (and, as they land,
 * mock models and toy tokenizers). Is not: part of the training runtime.
 */
export { gradCheck, type GradCheckOptions, type GradCheckResult } from './gradcheck.js';
