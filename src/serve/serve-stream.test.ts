/**
 * ChoiceStreams on a byte-level tokenizer (one token per UTF-8 byte) fed one token at a time, the
 * hardest case: no piece ends inside a character or inside what may become a stop string, the
 * pieces concatenate to the non-streamed text and tokens, and a choice ends at its stop string.
 */
import { describe, expect, it } from 'vitest';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { Completion } from '../sampling/index.js';
import { finishChoice } from './serve-protocol.js';
import { ChoiceStreams, type StreamPiece } from './serve-stream.js';

const bytes: TextTokenizer = {
  decode: (ids: ArrayLike<number>) => new TextDecoder().decode(Uint8Array.from(ids)),
} as unknown as TextTokenizer;

/** Streams `text`'s bytes token by token through ChoiceStreams; returns the pieces and the whole completion. */
function streamed(text: string, stopStrings: string[], maxNewTokens: number) {
  const ids = [...Buffer.from(text, 'utf8')].slice(0, maxNewTokens);
  const streams = new ChoiceStreams(1, stopStrings, bytes, maxNewTokens);
  const pieces: StreamPiece[] = [];
  const completion: Completion = { promptIndex: 0, sampleIndex: 0, ids: [], logprobs: [], finishReason: 'length' };
  for (const id of ids) {
    completion.ids.push(id);
    completion.logprobs.push(-id / 1000);
    pieces.push(...streams.progress([completion]));
  }
  const late = streams.finish([completion]);
  return { pieces: [...pieces, ...late], late, completion };
}

describe('ChoiceStreams', () => {
  it('holds back split characters and stop-string prefixes, and ends the choice at its stop string', () => {
    const { pieces, late, completion } = streamed('Hi é 😀 ST and STOP here', ['STOP'], 100);
    const whole = finishChoice(completion, ['STOP'], bytes);
    expect(whole.text).toBe('Hi é 😀 ST and ');
    for (const piece of pieces) expect(piece.text).not.toContain('\uFFFD');
    expect(pieces.map(({ text }) => text).join('')).toBe(whole.text);
    expect(pieces.flatMap(({ ids }) => ids)).toEqual(whole.ids);
    expect(pieces.flatMap(({ logprobs }) => logprobs)).toEqual(whole.logprobs);
    // "ST" waited until "ST " showed it is no stop string; "STOP" was never shown in part.
    expect(pieces.some(({ text }) => text.endsWith('S') || text.endsWith('ST'))).toBe(false);
    expect(late).toEqual([]); // it ended when its stop string appeared, not when the batch did
    expect(pieces.at(-1)!.finished).toMatchObject({ finishReason: 'stop', stopReason: 'STOP' });
    expect(pieces.filter(({ first }) => first)).toHaveLength(1);
    expect(pieces.length).toBeGreaterThan(10);
  });

  it('a choice that reaches max_tokens ends with everything it decoded, its offsets continuing', () => {
    const { pieces } = streamed('abc é', [], 5);
    expect(pieces.map(({ text }) => text).join('')).toBe('abc ' + new TextDecoder().decode(Uint8Array.of(0xc3)));
    expect(pieces.at(-1)!.finished!.finishReason).toBe('length');
    expect(pieces.map(({ firstOffset }) => firstOffset)).toEqual([0, 1, 2, 3, 4]);
  });
});
