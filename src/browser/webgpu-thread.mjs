/**
 * The webgpu backend's device thread in a browser tab: a Web Worker that opens the browser's own
 * `navigator.gpu` and answers webgpu-bridge.ts's requests with the same device code Node runs
 * (src/tensor/backends/webgpu/device-requests.mjs).
 *
 * Is: the transport. Each message carries a request, the shared control words and a shared reply
 * buffer; the answer is written into that buffer (webgpu-bridge.ts's layout: header length, JSON header,
 * then the answer's float arrays), then control word 0 is set to 1 and notified. The training worker
 * waits on that word: a browser has no receiveMessageOnPort, so answers cannot travel as messages to a
 * blocked thread. Is not: the GPU work. Plain JavaScript, bundled by src/web/build-page.ts as
 * webgpu-thread.js.
 */
import { serveDeviceRequests } from '../tensor/backends/webgpu/device-requests.mjs';

const answer = serveDeviceRequests(async () => globalThis.navigator?.gpu ?? null);

/** Writes `message` into `reply` (bytes): [header bytes u32][JSON header][pad to 4][floats…]; false when it does not fit. */
function writeAnswer(message, reply) {
  const floats = [];
  const header = {};
  for (const [key, value] of Object.entries(message)) {
    if (value instanceof Float32Array) {
      floats.push(value);
      header[key] = { floats: value.length };
    } else header[key] = value;
  }
  const text = new TextEncoder().encode(JSON.stringify(header));
  const start = 4 + Math.ceil(text.length / 4) * 4;
  const bytes = start + floats.reduce((total, array) => total + array.length * 4, 0);
  if (bytes > reply.byteLength) return false;
  new DataView(reply).setUint32(0, text.length, true);
  new Uint8Array(reply, 4, text.length).set(text);
  let at = start;
  for (const array of floats) {
    new Float32Array(reply, at, array.length).set(array);
    at += array.length * 4;
  }
  return true;
}

globalThis.onmessage = async ({ data: { request, control, reply } }) => {
  const { message } = await answer(request);
  if (!writeAnswer(message, reply))
    writeAnswer({ error: `its answer does not fit the ${reply.byteLength}-byte reply buffer` }, reply);
  Atomics.store(control, 0, 1);
  Atomics.notify(control, 0);
};
