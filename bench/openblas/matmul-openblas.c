/*
 * OpenBLAS reference timing for the matmul benchmarks: cblas_sgemm on the same shapes, best of N runs.
 *
 * Is: a bench-time helper compiled by bench/openblas/openblas.ts with `cc ... -lopenblas` (Debian's
 * libopenblas-dev) and run as a child process; prints one JSON line per shape.
 * Is not: part of the library or a runtime dependency.
 *
 * usage: matmul-openblas <threads> <repeats> [<batch>/]<M>x<K>x<N>[:<a><b>] [...]   (row-major, beta = 0)
 *        matmul-openblas config                     (prints OpenBLAS's build/core string)
 * A shape's suffix gives the transposes of A and B, n or t each (`4096x512x1536:nt`: C = A · Bᵀ, B stored
 * [N, K]); a batch prefix times `batch` products of separate matrices, one cblas_sgemm call each (OpenBLAS
 * has no batched SGEMM), as the attention's small products would run on it.
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

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

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
    fprintf(stderr, "usage: %s <threads> <repeats> [<batch>/]<M>x<K>x<N>[:<a><b>] [...]\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]), repeats = atoi(argv[2]);
  openblas_set_num_threads(threads);
  unsigned state = 12345u;
  for (int s = 3; s < argc; s++) {
    int batch = 1, m, k, n, used = 0;
    char ta = 'n', tb = 'n';
    const char *text = strchr(argv[s], '/') ? argv[s] : NULL;
    if (text && sscanf(argv[s], "%d/", &batch) != 1) batch = 0;
    text = text ? strchr(argv[s], '/') + 1 : argv[s];
    int fields = sscanf(text, "%dx%dx%d%n:%c%c", &m, &k, &n, &used, &ta, &tb);
    int tail_ok = text[used] == '\0' || (fields == 5 && text[used + 3] == '\0');
    if (fields < 3 || fields == 4 || !tail_ok || batch <= 0 || m <= 0 || k <= 0 || n <= 0 || (ta != 'n' && ta != 't') ||
        (tb != 'n' && tb != 't')) {
      fprintf(stderr, "bad shape '%s', expected [batch/]MxKxN[:ab] with a, b each n or t\n", argv[s]);
      return 2;
    }
    const size_t a_size = (size_t)m * k, b_size = (size_t)k * n, c_size = (size_t)m * n;
    float *a = random_floats(a_size * batch, &state), *b = random_floats(b_size * batch, &state);
    float *c = calloc(c_size * batch, sizeof(float));
    if (!a || !b || !c) return 3;
    const int trans_a = ta == 't' ? TRANS : NO_TRANS, trans_b = tb == 't' ? TRANS : NO_TRANS;
    const int lda = ta == 't' ? m : k, ldb = tb == 't' ? k : n;
    double best = 1e30;
    for (int r = -1; r < repeats; r++) { /* r = -1: warm-up */
      double start = now_seconds();
      for (int i = 0; i < batch; i++)
        cblas_sgemm(ROW_MAJOR, trans_a, trans_b, m, n, k, 1.0f, a + i * a_size, lda, b + i * b_size, ldb, 0.0f,
                    c + i * c_size, n);
      double elapsed = now_seconds() - start;
      if (r >= 0 && elapsed < best) best = elapsed;
    }
    printf("{\"backend\":\"openblas\",\"threads\":%d,\"batch\":%d,\"M\":%d,\"K\":%d,\"N\":%d,"
           "\"transposeA\":%s,\"transposeB\":%s,\"seconds\":%.9f,\"gflops\":%.3f,\"config\":\"%s\"}\n",
           threads, batch, m, k, n, ta == 't' ? "true" : "false", tb == 't' ? "true" : "false", best,
           2.0 * batch * m * n * (double)k / best / 1e9, openblas_get_config());
    fflush(stdout);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
