/**
 * Tests of the OpenEnv HTTP client against a server started here on 127.0.0.1 that speaks
 * OpenEnv's shape: an episode end to end, retries of /reset, a hanging /step timing out, a 422
 * named, a malformed reply named, and two live episodes on one URL refused.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Episode } from '../types.js';
import { openEnvEnvironment } from './remote.js';

/** A counter game: "inc" adds one (reward 1), done at 2. Failure switches are set by the tests. */
const state = {
  count: 0,
  resetFailures: 0,
  hangStep: false,
  hungSteps: 0,
  malformed: false,
  resetBodies: [] as unknown[],
};
let server: Server;
let url = '';

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const json = (status: number, value: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(typeof value === 'string' ? value : JSON.stringify(value));
      };
      const parsed = JSON.parse(body || '{}') as { action?: { message?: string } };
      if (request.url === '/reset') {
        state.resetBodies.push(parsed);
        if (state.resetFailures > 0) return (state.resetFailures--, json(503, { detail: 'starting' }));
        state.count = 0;
        return json(200, { observation: { text: 'count is 0' }, reward: null, done: false });
      }
      if (request.url === '/step') {
        if (state.hangStep) return void state.hungSteps++; // never answers
        if (state.malformed) return json(200, { observation: {}, reward: 'lots', done: false });
        if (parsed.action?.message === undefined) return json(422, { detail: 'action.message missing' });
        const increment = parsed.action.message.includes('inc') ? 1 : 0;
        state.count += increment;
        return json(200, {
          observation: { text: `count is ${state.count}` },
          reward: increment,
          done: state.count >= 2,
        });
      }
      json(404, { detail: 'no such endpoint' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const context = { seed: 5, episodeIndex: 0 };

describe('openEnvEnvironment', () => {
  it('runs an episode: reset → observation, steps → feedback, rewards summed, done', async () => {
    const environment = await openEnvEnvironment({ urls: [url], sendSeed: true })({}, context);
    expect(await environment.reset!()).toEqual({ messages: [{ role: 'user', content: 'count is 0' }] });
    expect(state.resetBodies.at(-1)).toEqual({ seed: 5 });
    const firstKey = environment.stateKey!();
    expect(await environment.respond!('wait')).toEqual({ observation: 'count is 0', reward: 0, done: false });
    expect(environment.stateKey!()).toBe(firstKey); // same observation, same anchor state
    expect(await environment.respond!('inc')).toEqual({ observation: 'count is 1', reward: 1, done: false });
    expect(environment.stateKey!()).not.toBe(firstKey);
    expect(await environment.respond!('inc please')).toEqual({ observation: 'count is 2', reward: 1, done: true });
    expect(environment.done!()).toBe(true);
    expect(await environment.reward!({} as Episode)).toBe(2);
    await environment.close!();
  });
  it('retries a failing /reset and gives up with the status after the retries', async () => {
    state.resetFailures = 2;
    const factory = openEnvEnvironment({ urls: [url], retries: 2, retryDelayMs: 10 });
    const environment = await factory({}, context);
    await expect(environment.reset!()).resolves.toBeDefined();
    await environment.close!();
    state.resetFailures = 5;
    const failing = await openEnvEnvironment({ urls: [url], retries: 1, retryDelayMs: 10 })({}, context);
    await expect(failing.reset!()).rejects.toThrow(`remote environment ${url}/reset: HTTP 503: {"detail":"starting"}`);
    state.resetFailures = 0;
  });
  it('a hanging /step times out with a message naming the URL (and is not repeated)', async () => {
    const environment = await openEnvEnvironment({ urls: [url], timeoutMs: 300, retries: 3 })({}, context);
    await environment.reset!();
    state.hangStep = true;
    state.hungSteps = 0;
    await expect(environment.respond!('inc')).rejects.toThrow(`remote environment ${url}/step: no reply within 300 ms`);
    expect(state.hungSteps).toBe(1); // one attempt, not four: a step may have changed the environment
    state.hangStep = false;
  });
  it('names a 422 and a malformed reply', async () => {
    const badAction = await openEnvEnvironment({ urls: [url], action: () => ({ other: 1 }) })({}, context);
    await badAction.reset!();
    await expect(badAction.respond!('inc')).rejects.toThrow(/\/step: HTTP 422: .*action\.message missing/);
    state.malformed = true;
    const environment = await openEnvEnvironment({ urls: [url] })({}, context);
    await environment.reset!();
    await expect(environment.respond!('inc')).rejects.toThrow(
      /\/step: "reward" must be a finite number or null, got "lots"/,
    );
    state.malformed = false;
  });
  it('an unreachable server is named after the retries', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const environment = await openEnvEnvironment({ urls: [deadUrl], retries: 1, retryDelayMs: 10 })({}, context);
    await expect(environment.reset!()).rejects.toThrow(`remote environment ${deadUrl}/reset: fetch failed`);
  });
  it('refuses two live episodes on one URL, and checks its options', async () => {
    const factory = openEnvEnvironment({ urls: [url] });
    const first = await factory({}, { seed: 1, episodeIndex: 0 });
    expect(() => factory({}, { seed: 2, episodeIndex: 1 })).toThrow(/still serving episode 0 when episode 1 started/);
    await first.close!();
    expect(await factory({}, { seed: 2, episodeIndex: 1 })).toBeDefined();
    expect(() => openEnvEnvironment({ urls: [] })).toThrow(/urls is empty/);
    expect(() => openEnvEnvironment({ urls: ['localhost:8000'] })).toThrow(/not an http\(s\) URL/);
  });
});
