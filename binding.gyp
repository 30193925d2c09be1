# node-gyp build of the optional `native` kernel backend (src/tensor/backends/native).
# Plain C against node_api.h: no node-addon-api package needed. AVX2 / AVX-512 paths are compiled through
# function target attributes and picked at run time, so no -march flag is needed or wanted here.
{
  "targets": [
    {
      "target_name": "grpo_native",
      "sources": [
        "src/tensor/backends/native/addon.c",
        "src/tensor/backends/native/gemm.c",
        "src/tensor/backends/native/gemm-half.c",
        "src/tensor/backends/native/gemm-pack.c",
        "src/tensor/backends/native/gemm-packed.c",
        "src/tensor/backends/native/row-kernels.c",
        "src/tensor/backends/native/decode-attention.c",
        "src/tensor/backends/native/attention.c",
        "src/tensor/backends/native/swiglu.c",
        "src/tensor/backends/native/elementwise.c",
        "src/tensor/backends/native/thread-pool.c",
        "src/tensor/backends/native/kernels-avx512.c",
        "src/tensor/backends/native/kernels-avx2.c",
        "src/tensor/backends/native/kernels-generic.c"
      ],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-std=gnu11", "-O3", "-pthread", "-fno-math-errno"],
      "cflags!": ["-O2", "-O0"],
      "ldflags": ["-pthread"]
    }
  ]
}
