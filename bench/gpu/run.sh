#!/usr/bin/env bash
# Runs on the lent GPU machine, from the repository root, after bench/gpu/prepare.sh filled .gpu/ here
# and the device tool carried it: the webgpu conformance checks and benches (bench/gpu/check.ts), then
# the same GRPO step and 4096³ product in PyTorch (bench/gpu/torch_grpo_step.py), each part under its
# own time limit so that one hang leaves the others' numbers. Output: JSON lines, also in $OUT/*.log.
# Locally (lavapipe, no CUDA) `OUT=/tmp/gpu bash bench/gpu/run.sh` runs the Node half as a rehearsal.
# PARTS (check.ts's parts for the first call), UNSAFE=0, TORCH=0, TORCH_FULL=0 (only the same-shape PyTorch steps),
# TORCH_BF16=1,
# and STEP=0 narrow a run to fit the time left.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out" /tmp/gpu-run
g=.gpu
gunzip -c "$g/node.gz" >/tmp/gpu-run/node && chmod +x /tmp/gpu-run/node
gunzip -kf "$g/node_modules/webgpu/dist/linux-x64/dawn.node.gz"
# The Vulkan loader and the GL vendor-neutral dispatch the NVIDIA ICD (libGLX_nvidia.so.0) needs, when
# the machine lacks them (the device tool's README: unpacked onto / then ldconfig).
if ! ldconfig -p | grep -q libGLdispatch.so.0 || ! ldconfig -p | grep -q libvulkan.so.1; then
  for deb in "$g"/*.deb; do dpkg -x "$deb" /; done
  ldconfig
fi
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; break; fi
done
echo "# vulkan driver: ${VK_DRIVER_FILES:-default search}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
node=/tmp/gpu-run/node
# The native addon built where prepare.sh ran (loaded by path: there is no build/ here).
export GRPO_NATIVE_ADDON=$PWD/$g/grpo_native.node
timeout "${CHECK_SECONDS:-200}" "$node" "$g/check.mjs" "$g/fixture" "${PARTS:-conformance,parity,matmul}" 2>&1 | grep -v '^Warning: maxDynamic' | tee "$out/check.log"
# The same products with Dawn's bounds-checking transform off (a lead for the product's speed).
if [ "${UNSAFE:-1}" = 1 ]; then
  echo '# again with GRPO_WEBGPU_DAWN_FLAGS=enable-dawn-features=allow_unsafe_apis,disable_robustness'
  GRPO_WEBGPU_DAWN_FLAGS='enable-dawn-features=allow_unsafe_apis,disable_robustness' CHECK_SHAPES=32768x896x4864 \
    timeout "${UNSAFE_SECONDS:-60}" "$node" "$g/check.mjs" "$g/fixture" matmul 2>&1 | grep -v '^Warning: maxDynamic' | tee "$out/unsafe.log"
fi
if [ "${TORCH:-1}" = 1 ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  export PYTHONUNBUFFERED=1
  timeout 60 python3 bench/gpu/torch_grpo_step.py --matmul 2>&1 | tee "$out/torch.log"
  # The steps check.ts times on webgpu at qwen2.5-0.5b-shape, same shapes: 1 prompt × 4 completions of
  # 32 + 16 tokens, and 2 × 4 of 128 + 128.
  timeout 90 python3 bench/gpu/torch_grpo_step.py --dtype float32 --prompts 1 --group-size 4 --prompt-length 32 \
    --new-tokens 16 --micro-batch 4 2>&1 | grep -v Warning | tee -a "$out/torch.log"
  timeout 90 python3 bench/gpu/torch_grpo_step.py --dtype float32 --prompts 2 --group-size 4 --prompt-length 128 \
    --new-tokens 128 --micro-batch 8 2>&1 | grep -v Warning | tee -a "$out/torch.log"
  if [ "${TORCH_FULL:-1}" = 1 ]; then
    timeout 120 python3 bench/gpu/torch_grpo_step.py --dtype float32 2>&1 | grep -v Warning | tee -a "$out/torch.log"
  fi
  if [ "${TORCH_BF16:-0}" = 1 ]; then
    timeout 90 python3 bench/gpu/torch_grpo_step.py --dtype bfloat16 2>&1 | grep -v Warning | tee -a "$out/torch.log"
  fi
else
  echo '# no CUDA PyTorch here: the PyTorch half is skipped'
fi
[ "${STEP:-1}" = 1 ] || exit 0
timeout "${STEP_SECONDS:-150}" "$node" "$g/check.mjs" "$g/fixture" step 2>&1 | grep -v '^Warning: maxDynamic' | tee "$out/step.log"
