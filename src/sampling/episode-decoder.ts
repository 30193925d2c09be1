/**
 * KV-cached decoding of multi-turn episodes over token ids: each episode keeps its own cache for
 * its whole life, so a turn continues from it — only the tokens appended since (the previous turn's
 * stop token and the observation ids after it) go through the model, never the episode so far.
 * One turn of many episodes decodes as one batch: each row reads its episode's cache as a shared
 * prefix (prefixAttention, as the group sampler reads a prompt) and writes the turn's keys into a
 * batched turn cache; when a row's turn ends its keys are copied onto its episode's cache.
 *
 * Legend: B = rows decoding this turn, Hkv, D as in the model, V = vocabulary.
 * Is not: tokenizer-aware (ids in, ids out), a tool runner, or a training forward. Each episode
 * draws from its own generator, so its tokens do not depend on which other episodes share a batch.
 */
import type { KvCache, Transformer } from '../model/transformer.js';
import { noGrad, type Random, Tensor, withConstantWeights } from '../tensor/index.js';
import { chooseTokens, type SamplingSettings } from './logits.js';
import { keepRows } from './sampler.js';

/** One decoded turn of one episode. */
export interface EpisodeTurn {
  ids: number[];
  /** Logprob of each id under logits / temperature (what the sampler saw: GRPO's π_old). */
  logprobs: number[];
  /** 'stop': the turn ended with a stop id (kept as its last id); 'length': it reached its limit. */
  finishReason: 'stop' | 'length';
}

interface EpisodeState {
  cache: KvCache;
  /** Logits after the last id fed through the cache: what the next sampled id is drawn from. */
  lastLogits: Float32Array;
  /** The last sampled id of the previous turn, not yet fed (it is fed with what follows it). */
  pending: number | null;
  random: Random;
}

/** [1, Hkv, room, D] with the first `used` positions of `tensor`, `room` ≥ needed (doubling). */
function grown(tensor: Tensor, used: number, needed: number): Tensor {
  const [, heads, capacity, headDim] = tensor.shape;
  if (needed <= capacity) return tensor;
  const room = Math.max(needed, capacity * 2);
  const data = new Float32Array(heads * room * headDim);
  for (let h = 0; h < heads; h++)
    data.set(tensor.data.subarray(h * capacity * headDim, (h * capacity + used) * headDim), h * room * headDim);
  return new Tensor(data, [1, heads, room, headDim]);
}

/** Decodes the turns of many episodes, each continuing from its own KV cache. */
export class EpisodeDecoder {
  private readonly episodes: EpisodeState[] = [];
  private readonly stop: ReadonlySet<number>;

  constructor(
    private readonly model: Transformer,
    private readonly settings: SamplingSettings,
    stopTokenIds: readonly number[],
  ) {
    this.stop = new Set(stopTokenIds);
  }

  /** Starts an episode from its prompt ids (prefilled once); returns its index. */
  add(promptIds: readonly number[], random: Random, capacity = 0): number {
    if (promptIds.length === 0) throw new Error('EpisodeDecoder.add: a prompt needs at least one token (e.g. BOS)');
    const cache = this.model.createCache(capacity);
    const lastLogits = this.feed(cache, promptIds);
    this.episodes.push({ cache, lastLogits, pending: null, random });
    return this.episodes.length - 1;
  }

  /** Positions the episode holds (its cache plus the stop id not yet fed). */
  length(episode: number): number {
    const state = this.episodes[episode];
    return state.cache.length + (state.pending === null ? 0 : 1);
  }

  /**
   * Feeds `ids` after what the episode holds (after the previous turn's last id): the observation
   * the environment appended. Costs one forward over these ids only.
   */
  append(episode: number, ids: readonly number[]): void {
    const state = this.episodes[episode];
    const fed = state.pending === null ? [...ids] : [state.pending, ...ids];
    if (fed.length === 0) return;
    state.lastLogits = this.feed(state.cache, fed);
    state.pending = null;
  }

  /**
   * Runs ids through a cache (no graph) and returns the last position's logits [V]. One forward
   * only, so the weights are not packed for it (packing pays off over many decode steps).
   */
  private feed(cache: KvCache, ids: readonly number[]): Float32Array {
    return noGrad(() => {
      const logits = this.model.forward(Int32Array.from(ids), 1, {
        cache,
        logitRows: Int32Array.of(ids.length - 1),
      }); // [1, V]
      return logits.data.slice();
    });
  }

  /**
   * Decodes one turn of each listed episode (at most `maxTokens[k]` ids each, ending early at a stop
   * id), all rows in one batch per step. An episode must have something fed since its last turn
   * (`append`) before it decodes again, so a turn never continues an unfed stop id.
   */
  decodeTurns(episodes: readonly number[], maxTokens: readonly number[]): EpisodeTurn[] {
    const turns: EpisodeTurn[] = episodes.map(() => ({ ids: [], logprobs: [], finishReason: 'length' }));
    episodes.forEach((episode) => {
      if (this.episodes[episode].pending !== null)
        throw new Error(`EpisodeDecoder.decodeTurns: episode ${episode} has an unfed id; append the observation first`);
    });
    const states = episodes.map((episode) => this.episodes[episode]);
    const finished = (k: number): boolean => turns[k].finishReason === 'stop' || turns[k].ids.length >= maxTokens[k];
    const accept = (k: number, { id, logprob }: { id: number; logprob: number }): void => {
      turns[k].ids.push(id);
      turns[k].logprobs.push(logprob);
      if (this.stop.has(id)) turns[k].finishReason = 'stop';
    };
    // Each episode's first id comes from the logits its cache already ends with.
    states.forEach((state, k) => {
      if (maxTokens[k] > 0) accept(k, chooseTokens(state.lastLogits, 1, this.settings, [state.random])[0]);
    });
    withConstantWeights(this.model.parameters.values(), () =>
      noGrad(() => this.decodeLoop(states, turns, maxTokens, finished, accept)),
    );
    states.forEach((state, k) => {
      state.pending = turns[k].ids.length > 0 ? turns[k].ids[turns[k].ids.length - 1] : null;
    });
    return turns;
  }

  /** The batched decode steps of one turn; a row leaves when its turn ends, its keys copied home first. */
  private decodeLoop(
    states: EpisodeState[],
    turns: EpisodeTurn[],
    maxTokens: readonly number[],
    finished: (k: number) => boolean,
    accept: (k: number, choice: { id: number; logprob: number }) => void,
  ): void {
    let active = states.map((_, k) => k).filter((k) => !finished(k));
    const turnCache = this.model.createCache(Math.max(1, ...maxTokens));
    const prompts = states.map((state) => state.cache);
    while (active.length > 0) {
      const B = active.length;
      const logits = this.model.forward(
        Int32Array.from(active, (k) => turns[k].ids[turns[k].ids.length - 1]),
        B,
        {
          cache: turnCache,
          positions: Int32Array.from(active, (k) => states[k].cache.length + turnCache.length),
          sharedPrefix: { prompts, rowPrefix: Int32Array.from(active) },
        },
      ); // [B, 1, V]
      const chosen = chooseTokens(
        logits.data,
        B,
        this.settings,
        active.map((k) => states[k].random),
      );
      active.forEach((k, b) => accept(k, chosen[b]));
      const leaving = active.flatMap((k, b) => (finished(k) ? [b] : []));
      if (leaving.length === 0) continue;
      for (const b of leaving) this.copyHome(turnCache, b, states[active[b]].cache);
      const staying = active.flatMap((k, b) => (finished(k) ? [] : [b]));
      if (staying.length > 0) {
        for (let layer = 0; layer < this.model.config.numLayers; layer++) {
          turnCache.keys[layer] = keepRows(turnCache.keys[layer]!, staying, turnCache.length);
          turnCache.values[layer] = keepRows(turnCache.values[layer]!, staying, turnCache.length);
        }
      }
      active = staying.map((b) => active[b]);
    }
  }

  /** Appends row b's keys and values of this turn (all fed ids) to its episode's own cache. */
  private copyHome(turnCache: KvCache, b: number, home: KvCache): void {
    const used = turnCache.length;
    if (used === 0) return;
    for (let layer = 0; layer < this.model.config.numLayers; layer++) {
      for (const which of ['keys', 'values'] as const) {
        const source = turnCache[which][layer]!; // [B, Hkv, capacity, D]
        const [, heads, capacity, headDim] = source.shape;
        const target = grown(home[which][layer]!, home.length, home.length + used); // [1, Hkv, room, D]
        const room = target.shape[2];
        for (let h = 0; h < heads; h++) {
          const from = (b * heads + h) * capacity * headDim;
          target.data.set(source.data.subarray(from, from + used * headDim), (h * room + home.length) * headDim);
        }
        home[which][layer] = target;
      }
    }
    home.length += used;
  }
}
