/**
 * Seeded random numbers: a small, fast, well-tested generator (SplitMix64 seeding a xoshiro128**)
 * in plain integer arithmetic, so the same seed gives the same numbers on every backend and machine.
 *
 * Is not: cryptographic. Sampling, data order, dropout-free initialisation and tests use it; its
 * full state can be saved and restored so a resumed run continues the same stream.
 */
import { Tensor } from './tensor.js';
import { sizeOf, type Shape } from './shape.js';

export interface RandomState {
  words: [number, number, number, number];
  /** A cached second normal from Box–Muller, or null. */
  spareNormal: number | null;
}

function splitMix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/**
 * The seed of step `step` of a run seeded `seed`: every random choice of a step (its prompts, its
 * sampling, its dropout masks) derives from it, never from RNG state carried across steps, so a
 * resumed run replays exactly what an uninterrupted one does.
 */
export const stepSeed = (seed: number, step: number): number => seed * 100_003 + step * 7 + 1;

export class Random {
  private words: Uint32Array;
  private spareNormal: number | null = null;

  constructor(seed = 0) {
    if (!Number.isFinite(seed)) throw new Error(`Random: seed must be a finite number, got ${seed}`);
    const next = splitMix32(Math.floor(seed) ^ Math.floor(seed / 2 ** 32));
    this.words = Uint32Array.from([next(), next(), next(), next()]);
    if (this.words.every((word) => word === 0)) this.words[0] = 1;
  }

  /** The next 32 random bits as an unsigned integer (xoshiro128**). */
  nextUint32(): number {
    const s = this.words;
    const result = Math.imul(rotateLeft(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotateLeft(s[3], 11);
    return result;
  }

  /** Uniform in [0, 1) with 32 bits of resolution. */
  uniform(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Integer uniform in [0, limit). */
  integer(limit: number): number {
    return Math.floor(this.uniform() * limit);
  }

  /** Standard normal (Box–Muller, caching the pair's second value). */
  normal(): number {
    if (this.spareNormal !== null) {
      const value = this.spareNormal;
      this.spareNormal = null;
      return value;
    }
    const u1 = 1 - this.uniform(); // (0, 1]: log never sees 0
    const u2 = this.uniform();
    const radius = Math.sqrt(-2 * Math.log(u1));
    this.spareNormal = radius * Math.sin(2 * Math.PI * u2);
    return radius * Math.cos(2 * Math.PI * u2);
  }

  /** Fisher–Yates shuffle in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.integer(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** A new generator whose stream is derived from this one (for independent sub-streams). */
  fork(): Random {
    return new Random(this.nextUint32() * 4294967296 + this.nextUint32());
  }

  getState(): RandomState {
    return { words: [this.words[0], this.words[1], this.words[2], this.words[3]], spareNormal: this.spareNormal };
  }

  setState(state: RandomState): void {
    this.words = Uint32Array.from(state.words);
    this.spareNormal = state.spareNormal;
  }
}

function rotateLeft(value: number, bits: number): number {
  return ((value << bits) | (value >>> (32 - bits))) >>> 0;
}

/** A tensor of normal samples with the given standard deviation. */
export function randomNormal(shape: Shape, random: Random, standardDeviation = 1): Tensor {
  const data = new Float32Array(sizeOf(shape));
  for (let i = 0; i < data.length; i++) data[i] = random.normal() * standardDeviation;
  return new Tensor(data, shape);
}

/** A tensor of uniform samples in [low, high). */
export function randomUniform(shape: Shape, random: Random, low = 0, high = 1): Tensor {
  const data = new Float32Array(sizeOf(shape));
  for (let i = 0; i < data.length; i++) data[i] = low + (high - low) * random.uniform();
  return new Tensor(data, shape);
}
