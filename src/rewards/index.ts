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
export * from './similarity.js';
export * from './code.js';
export * from './equation.js';
export * from './sql.js';
export * from './sql-partial.js';
export * from './verilog.js';
export { stripVerilogComments, verilogStatements, verilogStructureScore } from './verilog-structure.js';
export * from './ranking.js';
export * from './judge.js';
export * from './policy.js';
export * from './visual.js';
export * from './factories.js';
export {
  createRewardFactoryRegistry,
  UnknownRewardError,
  type RewardFactory,
  type RewardFactoryRegistry,
} from './factory-registry.js';
