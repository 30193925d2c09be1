/**
 * One agent episode's token bookkeeping: the rows it trains on, and how the next turn's context is
 * laid after the tokens so far. The rule that keeps training token-exact: the model's sampled ids
 * are kept as sampled (never re-tokenized); after a turn the conversation is rendered through the
 * chat template, and when that text extends the text of the tokens so far, only the new part (tool
 * results, feedback, the next assistant header) is tokenized and appended, with loss mask 0. When
 * it does not (the template rewrote history, e.g. dropped an earlier `<think>` block, or
 * re-serialised a tool call), the rendered conversation becomes the prompt of a new row, and the
 * episode goes on from there — each row extends exactly what the model saw.
 *
 * Is not: decoding (sampling/episode-decoder.ts), tool execution (agents/run-tools.ts) or the
 * turn loop (multi-turn-rollout.ts).
 */
import type { ToolCallFormat } from '../agents/tool-calls.js';
import type { ToolCall } from '../agents/types.js';
import { renderChatTemplate } from '../model/chat-template.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { ChatMessage } from '../rewards/types.js';
import type { RolloutRow } from './rollout.js';

/** A chat message with the fields templates read for tool use. */
export type AgentMessage = ChatMessage & {
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: Record<string, unknown> } }[];
  tool_call_id?: string;
  name?: string;
};

/** What rendering an episode needs: the template, its special tokens, the tools variable. */
export interface EpisodeRendering {
  tokenizer: TextTokenizer;
  chatTemplate: string;
  /** Template variables (`tools`), the same at every render of the episode. */
  variables: Record<string, unknown>;
  format: ToolCallFormat;
}

/** The conversation as the template renders it, ending with the assistant header for the next turn. */
export function renderConversation(rendering: EpisodeRendering, messages: readonly AgentMessage[]): string {
  return renderChatTemplate(rendering.chatTemplate, messages as ChatMessage[], rendering.tokenizer, {
    addGenerationPrompt: true,
    variables: rendering.variables,
  });
}

/**
 * A tool call id for templates that require one (Mistral: 9 alphanumeric characters): the model's
 * own when it wrote a valid one, else one derived from the turn and the call's place.
 */
export function toolCallId(call: ToolCall, turn: number, index: number): string {
  if (call.id && /^[a-zA-Z0-9]{9}$/.test(call.id)) return call.id;
  return `call${String(turn).padStart(3, '0')}${String(index).padStart(2, '0')}`;
}

/**
 * The assistant message of a turn as history. Its content is the model's text exactly, so that
 * templates that print content verbatim (Qwen/Hermes, Llama 3) reproduce the sampled tokens; Mistral's
 * template reads calls only from `tool_calls` (and refuses a tool message after a plain assistant
 * turn), so there the calls go there too.
 */
export function assistantMessage(
  text: string,
  calls: readonly ToolCall[],
  format: ToolCallFormat,
  turn: number,
): AgentMessage {
  if (format !== 'mistral' || calls.length === 0) return { role: 'assistant', content: text };
  return {
    role: 'assistant',
    content: text,
    tool_calls: calls.map((call, index) => ({
      id: toolCallId(call, turn, index),
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    })),
  };
}

/** The token rows of one episode and the text the current row's tokens spell. */
export class EpisodeRows {
  readonly rows: RolloutRow[];
  /** The text of the current row's prompt and completion so far (what the next render must extend). */
  private text: string;

  constructor(promptIds: number[], promptText: string) {
    this.rows = [{ promptIds, completionIds: [], oldLogprobs: [], lossMask: [], tokenTurns: [] }];
    this.text = promptText;
  }

  private get current(): RolloutRow {
    return this.rows[this.rows.length - 1];
  }

  /** Completion tokens of every row (the episode's token budget counts these). */
  get completionTokens(): number {
    return this.rows.reduce((total, row) => total + row.completionIds.length, 0);
  }

  /** Positions the current row occupies (its prompt and completion). */
  get positions(): number {
    return this.current.promptIds.length + this.current.completionIds.length;
  }

  /**
   * Records a sampled turn: its ids exactly, trained (mask 1), with the sampler's logprobs. Returns
   * the turn's text, and its content: the text without a special end-of-turn id (`<|im_end|>`,
   * `<|eot_id|>`), which the template writes itself; an ordinary stop id (a newline, a period) is
   * part of what the model said. Both are decoded in the context of the row (tokenizers whose
   * decoders strip or add a leading space decode a piece alone differently).
   */
  addTurn(
    ids: readonly number[],
    logprobs: readonly number[],
    turn: number,
    tokenizer: TextTokenizer,
    endsWithSpecialStop: boolean,
  ): { text: string; content: string } {
    const row = this.current;
    const before = [...row.promptIds, ...row.completionIds];
    const decode = (extra: readonly number[]): string => {
      const head = tokenizer.decode(before, { skipSpecialTokens: false });
      const whole = tokenizer.decode([...before, ...extra], { skipSpecialTokens: false });
      return whole.startsWith(head) ? whole.slice(head.length) : tokenizer.decode(extra, { skipSpecialTokens: false });
    };
    const text = decode(ids);
    const content = endsWithSpecialStop ? decode(ids.slice(0, -1)) : text;
    row.completionIds.push(...ids);
    row.oldLogprobs.push(...logprobs);
    for (let t = 0; t < ids.length; t++) {
      row.lossMask.push(1);
      row.tokenTurns!.push(turn);
    }
    this.text += text;
    return { text, content };
  }

  /**
   * Lays the next context after the tokens so far: `rendered` (the whole conversation through the
   * template) either extends this row's text — then the new ids (mask 0, logprob 0) are returned to
   * append — or it does not, and a new row starts with the rendered conversation as its prompt.
   */
  extend(
    rendered: string,
    tokenizer: TextTokenizer,
  ): { kind: 'append'; ids: number[] } | { kind: 'newRow'; promptIds: number[] } {
    if (rendered.startsWith(this.text)) {
      const ids = tokenizer.encode(rendered.slice(this.text.length), { addSpecialTokens: false });
      return { kind: 'append', ids };
    }
    return { kind: 'newRow', promptIds: tokenizer.encode(rendered, { addSpecialTokens: false }) };
  }

  /** Appends observation ids returned by `extend` (never trained: mask 0, no old logprob). */
  appendObservation(ids: readonly number[], renderedText: string): void {
    const row = this.current;
    row.completionIds.push(...ids);
    for (let t = 0; t < ids.length; t++) {
      row.oldLogprobs.push(0);
      row.lossMask.push(0);
      row.tokenTurns!.push(-1);
    }
    this.text = renderedText;
  }

  /** Starts a new row whose prompt is the rendered conversation. */
  startRow(promptIds: number[], renderedText: string): void {
    this.rows.push({ promptIds, completionIds: [], oldLogprobs: [], lossMask: [], tokenTurns: [] });
    this.text = renderedText;
  }
}
