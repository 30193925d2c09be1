/**
 * The built-in multi-turn game: guess the number. The model guesses, the environment answers
 * "higher" or "lower" through `respond()`, until the guess is right or the guesses run out.
 *
 * Is: a game with feedback, a `stateKey()` for GiGPO (the interval of numbers still possible given
 * the feedback so far — two episodes that learned the same thing are in the same anchor state), and
 * an episode reward (1 when solved, else 0). The target comes from the dataset row, so every episode
 * of a group plays the same game. Is not: a tool environment — the model answers in plain text.
 */
import type { Environment, EnvironmentFactory, EnvironmentFeedback } from '../types.js';

/** Options of {@link guessNumberEnvironment}. */
export interface GuessNumberOptions {
  /** Smallest possible target (default 1). */
  low?: number;
  /** Largest possible target (default 100). */
  high?: number;
  /** Guesses allowed, invalid answers included (default 7: enough for 1–100 by halving). */
  maxGuesses?: number;
  /** The row column holding the target (default 'target'). */
  targetColumn?: string;
}

/** The environment of one game, exported for direct tests and custom factories. */
export class GuessNumberGame implements Environment {
  /** Numbers still possible given the feedback so far. */
  private interval: [number, number];
  private guesses = 0;
  private solved = false;

  constructor(
    private readonly target: number,
    private readonly options: Required<Omit<GuessNumberOptions, 'targetColumn'>>,
  ) {
    this.interval = [options.low, options.high];
  }

  respond(assistantText: string): EnvironmentFeedback {
    this.guesses++;
    const numbers = assistantText.match(/-?\d+/g);
    const left = this.options.maxGuesses - this.guesses;
    if (numbers === null) {
      if (left <= 0) return { done: true };
      return {
        observation: `Answer with one whole number from ${this.options.low} to ${this.options.high}.`,
        done: false,
      };
    }
    const guess = Number(numbers[numbers.length - 1]);
    if (guess === this.target) {
      this.solved = true;
      return { observation: 'Correct!', done: true };
    }
    if (guess < this.target) this.interval[0] = Math.max(this.interval[0], guess + 1);
    else this.interval[1] = Math.min(this.interval[1], guess - 1);
    if (left <= 0) return { done: true };
    return { observation: `${guess} is too ${guess < this.target ? 'low' : 'high'}. Guess again.`, done: false };
  }

  done(): boolean {
    return this.solved || this.guesses >= this.options.maxGuesses;
  }

  stateKey(): string {
    return `${this.interval[0]}..${this.interval[1]}`;
  }

  reward(): number {
    return this.solved ? 1 : 0;
  }
}

/**
 * A guess-the-number environment factory; the row's `targetColumn` must be a whole number in
 * [low, high] (an error names the column and the value otherwise).
 * @example guessNumberEnvironment({ low: 1, high: 100, maxGuesses: 7 })
 */
export function guessNumberEnvironment({
  low = 1,
  high = 100,
  maxGuesses = 7,
  targetColumn = 'target',
}: GuessNumberOptions = {}): EnvironmentFactory {
  if (!Number.isInteger(low) || !Number.isInteger(high) || low > high) {
    throw new Error(`guessNumberEnvironment: low and high must be whole numbers with low ≤ high, got ${low}, ${high}.`);
  }
  if (!Number.isInteger(maxGuesses) || maxGuesses < 1) {
    throw new Error(`guessNumberEnvironment: maxGuesses must be a positive whole number, got ${maxGuesses}.`);
  }
  return (row) => {
    const target = Number(row[targetColumn]);
    if (!Number.isInteger(target) || target < low || target > high) {
      throw new Error(
        `guessNumberEnvironment: row column "${targetColumn}" must be a whole number from ${low} to ${high}, got ${JSON.stringify(row[targetColumn])}.`,
      );
    }
    return new GuessNumberGame(target, { low, high, maxGuesses });
  };
}
