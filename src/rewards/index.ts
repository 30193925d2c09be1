/**
 * Public API of the rewards layer: types, the runner, combination, the built-in rewards and the
 * registry of reward factories by name. Imports nothing from tensors.
 */
export * from './types.js';
export * from './run.js';
export * from './batched.js';
export * from './combine.js';
export * from './math.js';
export * from './format.js';
export * from './length.js';
export * from './group.js';
export * from './tool-efficiency.js';
export { smartSearchComposite, smartSearchReward, type SmartSearchRewardOptions } from './smartsearch.js';
export * from './similarity.js';
export * from './code.js';
export * from './equation.js';
export * from './sql.js';
export * from './sql-partial.js';
export * from './verilog.js';
export { stripVerilogComments, verilogStatements, verilogStructureScore } from './verilog-structure.js';
export * from './ranking.js';
export * from './domain-router.js';
export { boxedContents, wirelessMath, type WirelessMathOptions } from './wireless-math.js';
export * from './rlprompt.js';
export * from './stealthrl.js';
export * from './graph-problems.js';
export * from './stl.js';
export * from './judge.js';
export * from './policy.js';
export * from './visual.js';
export * from './numeric-answer.js';
export { cerm, cermScore, errorMagnitudeScore, percentFloat, pythonFloat } from './cerm.js';
export { parseSpan, shapeIou, temporalIou, temporalIouReward, temporalFormatReward } from './temporal-grounding.js';
export * from './point-in-box.js';
export * from './mask-iou.js';
export * from './transformation-credit.js';
export * from './think-answer-consistency.js';
export * from './factories.js';
export { outcomeGatedProcess, type OutcomeGatedProcessOptions } from './posterior-gated.js';
export {
  extractMasaPrediction,
  masaMetaScore,
  masaReward,
  type MasaOptions,
  type MasaPrediction,
  type MasaSolutionStats,
} from './masa.js';
export { refineConfidence, refineReferences, refineStructure, refineTrust } from './refine-trust.js';
export { stepCount } from './step-count.js';
export { grpoLambda, grpoLambdaScores, type GrpoLambdaGroup, type GrpoLambdaOptions } from './grpo-lambda.js';
export {
  checkRewardColumns,
  checkRewardToolCalls,
  describeMissingColumn,
  missingRewardColumns,
} from './row-columns.js';
export {
  createRewardFactoryRegistry,
  UnknownRewardError,
  type RewardFactory,
  type RewardFactoryRegistry,
} from './factory-registry.js';
