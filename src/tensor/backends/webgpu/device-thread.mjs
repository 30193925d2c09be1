/**
 * The webgpu backend's device thread in Node: a worker_threads Worker that opens Dawn for Node (the
 * optional `webgpu` package) and answers node-bridge.ts's requests with device-requests.mjs.
 *
 * Is: the transport. A request arrives on the MessagePort; the reply is posted on the same port, then
 * the shared word is set to 1 and notified, and the calling thread (blocked in Atomics.wait) reads the
 * reply with receiveMessageOnPort. Is not: the GPU work (device-requests.mjs).
 *
 * Dawn pitfall kept here: the object `create()` returns stays referenced for the life of the thread
 * (Dawn touches freed memory otherwise).
 */
import { workerData } from 'node:worker_threads';
import { serveDeviceRequests } from './device-requests.mjs';

const { control, port } = workerData;
let dawn; // the create() object: must outlive the device (see above)

const answer = serveDeviceRequests(async ({ modulePath, dawnFlags }) => {
  const { create, globals } = await import(modulePath);
  Object.assign(globalThis, globals);
  dawn = create(dawnFlags);
  return dawn;
});

port.on('message', async (request) => {
  const { message, transfer } = await answer(request);
  port.postMessage(message, transfer);
  Atomics.store(control, 0, 1);
  Atomics.notify(control, 0);
});
