/**
 * Reading a request's JSON body with its bounds checked before the work, for both HTTP servers
 * (`grpo serve`, `grpo serve-rewards`): at most `maxBytes` bytes are kept (a larger body is drained
 * and answered 413, a Content-Length over it refused before a byte is read), and the nesting depth
 * of arrays and objects is measured by one linear scan of the text before `JSON.parse` runs, so a
 * body nested 10⁴ deep is a 400 here rather than a stack overflow in whatever walks it later.
 *
 * Is not: a validator of the body's fields (serve-protocol.ts, reward-protocols.ts), or an HTTP
 * response writer: errors carry the status and each server answers in its own error shape.
 */
import type { IncomingMessage } from 'node:http';

/** A body refused before parsing: 413 over the byte limit, 400 for bad JSON or too deep a nesting. */
export class BodyError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 413,
  ) {
    super(message);
  }
}

export interface JsonBodyLimits {
  /** Most bytes in a body. */
  maxBytes: number;
  /** Most levels of nested arrays and objects (the body object itself is level 1). */
  maxDepth: number;
}

/**
 * The deepest nesting of arrays and objects in JSON `text`, stopping as soon as it passes `limit`
 * (then it returns a number above `limit`). Brackets inside strings do not count. One pass, no
 * recursion, no allocation: safe on any text, valid JSON or not.
 */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped, whatever it is
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/** Reads the whole body as text, keeping at most `maxBytes` (see the file header). */
function readText(request: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new BodyError(`the request body is over the limit of ${maxBytes} bytes`, 413);
    const declared = Number(request.headers['content-length']);
    // Past the limit the rest is read and dropped, so the 413 reaches a client that is still sending.
    let over = Number.isFinite(declared) && declared > maxBytes;
    if (over) reject(tooLarge());
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > maxBytes) {
        over = true;
        chunks.length = 0;
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    request.on('error', reject);
    request.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** The parsed JSON body of `request`, within `limits`; throws BodyError naming the bound broken. */
export async function readJsonBody(request: IncomingMessage, limits: JsonBodyLimits): Promise<unknown> {
  const text = await readText(request, limits.maxBytes);
  if (jsonNestingDepth(text, limits.maxDepth) > limits.maxDepth)
    throw new BodyError(`the request body nests arrays and objects more than ${limits.maxDepth} levels deep`, 400);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new BodyError(`the body is not valid JSON: ${(error as Error).message}`, 400);
  }
}
