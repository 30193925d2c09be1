/*
 * OpenBLAS reference timing for the matmul benchmarks: cblas_sgemm on the same shapes, best of N runs.
 *
 * Is: a bench-time helper compiled by bench/openblas/openblas.ts with `cc ... -lopenblas` (Debian's
 * libopenblas-dev) and run as a child process; prints one JSON line per shape.
 * Is not: part of the library or a runtime dependency.
 *
 * usage: matmul-openblas <threads> <repeats> <M>x<K>x<N> [...]   (row-major, no transposes, beta = 0)
 *        matmul-openblas config                                  (prints OpenBLAS's build/core string)
 */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Declared here rather than through cblas.h, whose Debian path differs between OpenBLAS flavours. */
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void openblas_set_num_threads(int threads);
char *openblas_get_config(void);

enum { ROW_MAJOR = 101, NO_TRANS = 111 };

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *random_floats(size_t count, unsigned *state) {
  float *data = malloc(count * sizeof(float));
  for (size_t i = 0; i < count && data; i++) {
    *state = *state * 1664525u + 1013904223u;
    data[i] = (float)(*state >> 8) / 16777216.0f - 0.5f;
  }
  return data;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "config") == 0) {
    printf("%s\n", openblas_get_config());
    return 0;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: %s <threads> <repeats> <M>x<K>x<N> [...]\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]), repeats = atoi(argv[2]);
  openblas_set_num_threads(threads);
  unsigned state = 12345u;
  for (int s = 3; s < argc; s++) {
    int m, k, n;
    if (sscanf(argv[s], "%dx%dx%d", &m, &k, &n) != 3 || m <= 0 || k <= 0 || n <= 0) {
      fprintf(stderr, "bad shape '%s', expected MxKxN\n", argv[s]);
      return 2;
    }
    float *a = random_floats((size_t)m * k, &state), *b = random_floats((size_t)k * n, &state);
    float *c = calloc((size_t)m * n, sizeof(float));
    if (!a || !b || !c) return 3;
    cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
      double start = now_seconds();
      cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
      double elapsed = now_seconds() - start;
      if (elapsed < best) best = elapsed;
    }
    printf("{\"backend\":\"openblas\",\"threads\":%d,\"M\":%d,\"K\":%d,\"N\":%d,\"seconds\":%.9f,\"gflops\":%.3f,"
           "\"config\":\"%s\"}\n",
           threads, m, k, n, best, 2.0 * m * n * (double)k / best / 1e9, openblas_get_config());
    fflush(stdout);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
