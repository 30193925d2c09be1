/**
 * The built-in tools and environments of the agents layer, as the public API exports them:
 * calculator, code interpreter and BM25 search tools; tool-use, guess-the-number and OpenEnv
 * remote environments, UI-S1's semi-online replay (docs/agents-tools.md).
 *
 * Is: re-exports only. Is not: a registry — recipes construct these in code and pass them as
 * their `environment`.
 */
export { calculatorTool, evaluateArithmetic, type CalculatorToolOptions } from './tools/calculator.js';
export { interpreterTool, type InterpreterToolOptions } from './tools/interpreter.js';
export { readSearchDocuments, searchTool, type SearchDocument, type SearchToolOptions } from './tools/search.js';
export { toolUseEnvironment, type ToolUseEnvironmentOptions } from './environments/tool-use.js';
export { GuessNumberGame, guessNumberEnvironment, type GuessNumberOptions } from './environments/guess-number.js';
export {
  guiStepScore,
  parseAction,
  SemiOnlineEpisode,
  semiOnlineEnvironment,
  type ExpertStep,
  type SemiOnlineOptions,
} from './environments/semi-online.js';
export {
  queryNovelty,
  searchResultDocuments,
  smartSearchEnvironment,
  type QueryUsefulnessInput,
  type SmartSearchEnvironmentOptions,
} from './environments/smartsearch.js';
export { openEnvEnvironment, type OpenEnvOptions, type OpenEnvResult } from './environments/remote.js';
export {
  callSimilarity,
  matchCallRewards,
  matchedCallsEnvironment,
  type MatchedCallsOptions,
  type ReferenceCall,
} from './environments/matched-calls.js';
