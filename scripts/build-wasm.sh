#!/usr/bin/env bash
# Rebuilds src/tensor/backends/wasm/kernels.wasm from kernels.c (`npm run build:wasm`).
# Is: the one place the wasm compile flags live. Is not: run by CI or `npm install` — the built
# .wasm is committed, so users need no C toolchain. Needs clang and wasm-ld with wasm32 support.
#
# Flags, and why:
#   -msimd128                 f32x4 kernels (every current engine: Node >= 16.4, browsers since 2021)
#   -matomics -mbulk-memory   required by wasm-ld for a shared memory (worker_threads share it)
#   no -ffast-math            NaN/Inf must propagate like in the js spec; no reassociation either
#   --import-memory --shared-memory --max-memory=4GiB   the loader creates one shared memory for
#                             the calling thread and all workers; wasm32 cannot address more
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$here/src/tensor/backends/wasm"
clang --target=wasm32 -nostdlib -O3 -msimd128 -matomics -mbulk-memory \
  -Wall -Wextra -Werror \
  -Wl,--no-entry -Wl,--import-memory -Wl,--shared-memory -Wl,--max-memory=4294967296 \
  -Wl,-z,stack-size=16384 -Wl,--export=__heap_base -Wl,--strip-all \
  -o "$dir/kernels.wasm" "$dir/kernels.c"
# Every thread runs on the same memory with the same __stack_pointer, so the kernels must not use
# the linear-memory shadow stack at all (locals stay in wasm locals/registers). Check it.
if clang --target=wasm32 -O3 -msimd128 -matomics -mbulk-memory -S -o - "$dir/kernels.c" | grep -q __stack_pointer; then
  echo "kernels.c uses the shadow stack (__stack_pointer); threads would clobber each other" >&2
  exit 1
fi
echo "built $dir/kernels.wasm ($(wc -c < "$dir/kernels.wasm") bytes)"
