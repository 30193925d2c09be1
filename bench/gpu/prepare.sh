#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) with everything a bare GPU machine needs to run bench/gpu/run.sh: it
# has CUDA, PyTorch and a Vulkan-capable NVIDIA driver but no Node, no npm and no network.
#   - node.gz: this machine's `node` binary, gzipped (~36 MB);
#   - check.mjs: an esbuild bundle of bench/gpu/check.ts (the webgpu conformance checks and benches),
#     with the plain-JS worker files and the wasm kernels beside it at the relative URLs they are loaded by;
#   - node_modules/webgpu: the `webgpu` package's entry and its linux-x64 dawn.node only (gzipped; the
#     package is 132 MB with every platform's build);
#   - grpo_native.node: the native addon built here (the host-side kernels there, and the CPU baseline);
#   - libvulkan1's .deb (the Vulkan loader; the machine has the NVIDIA ICD but maybe no loader);
#   - fixture/: the TinyStories fixture with its PyTorch reference.
# Together ≤ 64 MiB, the device tool's limit. Usage: bash bench/gpu/prepare.sh (from any directory).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.gpu
rm -rf "$out"
mkdir -p "$out/node_modules/webgpu/dist/linux-x64" "$out/fixture"
npx esbuild bench/gpu/check.ts --bundle --platform=node --format=esm --target=node20 --log-level=warning \
  --outfile="$out/check.mjs" --external:webgpu \
  --banner:js="import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);"
cp src/tensor/backends/webgpu/*.mjs "$out/"
# The native addon (runtime ISA dispatch, glibc ≥ 2.34): the GPU machine's host-side row kernels and CPU baseline.
cp build/Release/grpo_native.node "$out/"
cp src/tensor/backends/wasm/worker.mjs src/tensor/backends/wasm/thread-loop.mjs src/tensor/backends/wasm/kernels.wasm "$out/"
cp node_modules/webgpu/index.js node_modules/webgpu/package.json node_modules/webgpu/LICENSE.md "$out/node_modules/webgpu/"
gzip -c node_modules/webgpu/dist/linux-x64/dawn.node >"$out/node_modules/webgpu/dist/linux-x64/dawn.node.gz"
gzip -c "$(command -v node)" >"$out/node.gz"
cp ../shared/fixtures/models/tinystories-656k/{config.json,model.safetensors,reference.json,tokenizer.json,tokenizer_config.json,generation_config.json} "$out/fixture/"
(cd "$out" && apt-get download -qq libvulkan1 libglvnd0 libglx0 libegl1 libopengl0 libgl1 libgles2 2>/dev/null)
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>"$(git rev-parse --git-path info/exclude)"
du -sh "$out"
