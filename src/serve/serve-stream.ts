/**
 * `stream: true` for `grpo serve`: server-sent events as OpenAI and vLLM send them (`data: {chunk}`
 * and a blank line per chunk, `data: [DONE]` at the end), and the text of each choice cut into the
 * pieces those chunks carry as the batcher reports its completions growing after each decode slice.
 *
 * A piece holds back the text that is not settled yet: a trailing incomplete UTF-8 character (the
 * decoder's U+FFFD) and a tail that could still become a stop string, so the pieces of a choice
 * concatenate to exactly the text a non-streamed answer gives (finishChoice decides the end of both).
 * A choice ends as soon as its own sequence does (a stop id, max_tokens, or a stop string in its
 * text), not when its whole batch does.
 *
 * Is not: the chunks' JSON shapes (serve-server.ts builds them per route) or the batching.
 */
import type { ServerResponse } from 'node:http';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { Completion } from '../sampling/index.js';
import { finishChoice, type FinishedChoice, type TokenRun } from './serve-protocol.js';

/** New tokens and text of one choice, for one chunk. */
export interface StreamPiece extends TokenRun {
  /** The choice's index in the answer (prompt-major, as in a non-streamed answer). */
  index: number;
  text: string;
  /** Where this piece's first token starts among its choice's token texts (completions' text_offset). */
  firstOffset: number;
  /** The choice's first piece. */
  first: boolean;
  /** On the choice's last piece: the whole finished choice (finish_reason, stop_reason, all ids). */
  finished: FinishedChoice | null;
}

/** What one choice has sent so far. */
interface Sent {
  ids: number;
  text: string;
  offset: number;
  started: boolean;
  finished: FinishedChoice | null;
}

/** Cuts every choice of one request into pieces as its completions grow. */
export class ChoiceStreams {
  private readonly sent: Sent[];

  constructor(
    count: number,
    private readonly stopStrings: string[],
    private readonly tokenizer: TextTokenizer,
    private readonly maxNewTokens: number,
  ) {
    this.sent = Array.from({ length: count }, () => ({ ids: 0, text: '', offset: 0, started: false, finished: null }));
  }

  /** The finished choices, in index order, once `finish` has run. */
  get finished(): FinishedChoice[] {
    return this.sent.map(({ finished }) => finished!);
  }

  /** The settled new text of every unfinished choice, and the last piece of each choice that has just ended. */
  progress(completions: Completion[]): StreamPiece[] {
    const pieces: StreamPiece[] = [];
    completions.forEach((completion, index) => {
      const sent = this.sent[index];
      if (sent.finished || completion.ids.length === sent.ids) return;
      const text = this.decode(completion.ids);
      const ended = completion.finishReason === 'stop' || completion.ids.length >= this.maxNewTokens;
      if (ended || this.stopStrings.some((stop) => text.includes(stop))) {
        pieces.push(this.last(index, completion));
        return;
      }
      let end = completion.ids.length;
      let shown = text;
      while (end > sent.ids && this.unsettled(shown)) shown = this.decode(completion.ids.slice(0, --end));
      if (end > sent.ids && shown.startsWith(sent.text)) pieces.push(this.piece(index, completion, end, shown, null));
    });
    return pieces;
  }

  /** The last piece of every choice not ended yet (the batch is done: `completions` are final). */
  finish(completions: Completion[]): StreamPiece[] {
    return completions.flatMap((completion, index) =>
      this.sent[index].finished ? [] : [this.last(index, completion)],
    );
  }

  private decode(ids: number[]): string {
    return this.tokenizer.decode(ids, { skipSpecialTokens: true });
  }

  /** Text whose end may still change: an incomplete character, or a tail that begins a stop string. */
  private unsettled(text: string): boolean {
    if (text.endsWith('\uFFFD')) return true;
    return this.stopStrings.some((stop) => {
      for (let length = 1; length < stop.length; length++) if (text.endsWith(stop.slice(0, length))) return true;
      return false;
    });
  }

  private last(index: number, completion: Completion): StreamPiece {
    const finished = finishChoice(completion, this.stopStrings, this.tokenizer);
    return this.piece(index, finished, finished.ids.length, finished.text, finished);
  }

  private piece(index: number, run: TokenRun, end: number, text: string, finished: FinishedChoice | null): StreamPiece {
    const sent = this.sent[index];
    const ids = run.ids.slice(sent.ids, end);
    const piece: StreamPiece = {
      index,
      text: text.slice(sent.text.length),
      ids,
      logprobs: run.logprobs.slice(sent.ids, end),
      topLogprobs: run.topLogprobs?.slice(sent.ids, end),
      firstOffset: sent.offset,
      first: !sent.started,
      finished,
    };
    for (const id of ids) sent.offset += this.tokenizer.decode([id]).length;
    Object.assign(sent, { ids: end, text, started: true, finished });
    return piece;
  }
}

/** A response turned into a server-sent event stream: `send` writes one `data:` event, `end` the `[DONE]` one. */
export function openEventStream(response: ServerResponse): { send(chunk: unknown): void; end(): void } {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  return {
    send: (chunk) => void response.write(`data: ${JSON.stringify(chunk)}\n\n`),
    end: () => response.end('data: [DONE]\n\n'),
  };
}
