/**
 * `grpo serve`'s /v1/load_lora_adapter on hostile adapter folders (issue 36): a rank or a size over
 * the limits is refused before anything is allocated, a FIFO is refused (not read, so the server
 * does not hang), a file that links outside the folder is refused, and no error quotes a file's
 * contents. The operator's own `--adapter` folder may still link elsewhere (a Hugging Face cache).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapter } from '../model/adapter-files.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { startServe, type RunningServer } from '../serve/serve-server.js';
import { tinyStoriesAdapter, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const checkpoint = loadCheckpoint(tinyStoriesModel);
const scratch = mkdtempSync(join(tmpdir(), 'grpo-serve-adapters-'));
const SECRET = 'root:x:0:0:SECRET-7f3a9c';
const secretFile = join(scratch, 'secret.txt');
const fixtureConfig = JSON.parse(readFileSync(join(tinyStoriesAdapter, 'adapter_config.json'), 'utf8'));

let running: RunningServer;
beforeAll(async () => {
  writeFileSync(secretFile, `${SECRET}\n`);
  running = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName: 'tiny',
    tokenizer: loadTokenizer(tinyStoriesModel),
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    port: 0,
  });
});
afterAll(async () => {
  await running.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A copy of the fixture adapter; `change` then alters its files. */
function adapterFolder(name: string, change: (folder: string) => void = () => {}): string {
  const folder = join(scratch, name);
  mkdirSync(folder);
  for (const file of ['adapter_config.json', 'adapter_model.safetensors'])
    copyFileSync(join(tinyStoriesAdapter, file), join(folder, file));
  change(folder);
  return folder;
}

const replace = (folder: string, file: string, make: (path: string) => void) => {
  rmSync(join(folder, file));
  make(join(folder, file));
};

async function load(server: RunningServer, path: string): Promise<{ status: number; message: string; param: string }> {
  const response = await fetch(`${server.url}/v1/load_lora_adapter`, {
    method: 'POST',
    body: JSON.stringify({ lora_name: `a${Math.random()}`, lora_path: path }),
  });
  const text = await response.text();
  if (response.status === 200) return { status: 200, message: text, param: '' };
  const { error } = JSON.parse(text) as { error: { message: string; param: string } };
  return { status: response.status, message: error.message, param: error.param };
}

describe('load_lora_adapter refuses hostile adapter folders', () => {
  it.each([
    // [case, folder maker, what the message says]
    [
      'r = 2e6 (3 GB of tensors before this fix)',
      (folder: string) =>
        writeFileSync(join(folder, 'adapter_config.json'), JSON.stringify({ ...fixtureConfig, r: 2_000_000 })),
      /field "r" is 2000000, over this server's limit of 512/,
    ],
    [
      'the weights are a FIFO (the server hung before this fix)',
      (folder: string) => replace(folder, 'adapter_model.safetensors', (path) => execFileSync('mkfifo', [path])),
      /adapter_model\.safetensors: not a regular file/,
    ],
    [
      'the config links to a file outside the folder',
      (folder: string) => replace(folder, 'adapter_config.json', (path) => symlinkSync(secretFile, path)),
      /adapter_config\.json: links outside the adapter folder/,
    ],
    [
      'the config links to a device',
      (folder: string) => replace(folder, 'adapter_config.json', (path) => symlinkSync('/dev/zero', path)),
      /adapter_config\.json: links outside the adapter folder/,
    ],
    [
      'the config holds text that is not JSON',
      (folder: string) => writeFileSync(join(folder, 'adapter_config.json'), SECRET),
      /adapter_config\.json: is not valid JSON$/,
    ],
    [
      'the weights hold text that is not safetensors',
      (folder: string) => writeFileSync(join(folder, 'adapter_model.safetensors'), `${SECRET}`.repeat(100)),
      /adapter_model\.safetensors: header length \d+ is implausible/,
    ],
  ])('%s: 400 naming lora_path, no contents quoted', async (name, change, message) => {
    const folder = adapterFolder(name.replace(/\W+/g, '-'), change);
    const reply = await load(running, folder);
    expect(reply.status).toBe(400);
    expect(reply.param).toBe('lora_path');
    expect(reply.message).toMatch(message);
    expect(reply.message).not.toContain('SECRET');
  });

  it('an adapter over --max-adapter-bytes (its file, or the tensors its rank asks for) is refused', async () => {
    const small = await startServe({
      model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
      modelName: 'tiny',
      tokenizer: loadTokenizer(tinyStoriesModel),
      stopTokenIds: [],
      port: 0,
      limits: { maxAdapterBytes: 10_000 },
    });
    try {
      const reply = await load(small, tinyStoriesAdapter);
      expect(reply.status).toBe(400);
      expect(reply.message).toMatch(
        /needs \d+ bytes of adapter tensors for this model, over this server's limit of 10000/,
      );
    } finally {
      await small.close();
    }
  });

  it('links inside the folder load; the operator may point --adapter at links elsewhere', async () => {
    const inside = adapterFolder('inside-links', (folder) => {
      mkdirSync(join(folder, 'blobs'));
      for (const file of ['adapter_config.json', 'adapter_model.safetensors']) {
        copyFileSync(join(folder, file), join(folder, 'blobs', file));
        replace(folder, file, (path) => symlinkSync(join(folder, 'blobs', file), path));
      }
    });
    expect((await load(running, inside)).status).toBe(200);
    // A Hugging Face cache snapshot: every file a link into ../blobs. Refused from a client, read for the operator.
    const snapshot = join(scratch, 'snapshot');
    mkdirSync(snapshot);
    for (const file of ['adapter_config.json', 'adapter_model.safetensors'])
      symlinkSync(join(tinyStoriesAdapter, file), join(snapshot, file));
    expect((await load(running, snapshot)).message).toMatch(/links outside the adapter folder/);
    expect(loadAdapter(snapshot, checkpoint.config).pairs.size).toBeGreaterThan(0);
  });
});
