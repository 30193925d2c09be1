/*
 * Machine peaks for the benchmarks' ratios: FP32 FMA throughput and streaming-read bandwidth, measured
 * now, on this machine, with the given number of threads (so every bench figure is a ratio to something
 * measured in the same run, never a constant).
 *
 * Is: a bench-time helper compiled by bench/peak/peak.ts with `cc -O3 -march=native -pthread` and run as
 * a child process; prints one JSON line.
 *   - fma: each thread runs 12 independent vector FMA chains (enough to cover FMA latency × ports on
 *     Zen3, Skylake-X and Sapphire Rapids) over registers only; GFLOP/s = 2 · lanes · FMAs / wall
 *     seconds. With AVX-512 both 256- and 512-bit widths are timed and the faster one counts (some
 *     parts issue only one 512-bit FMA per cycle). Best of `repeats`.
 *   - read: each thread sums its share of a `megabytes` buffer (far larger than the last-level cache),
 *     written once beforehand so its pages are mapped; GB/s = bytes / wall seconds. Best of `repeats`.
 * Is not: part of the library, or a promise that real kernels reach these numbers.
 *
 * usage: peak <threads> [repeats=3] [megabytes=512]
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { CHAINS = 12 };
static const long FMA_ITERATIONS = 40L * 1000 * 1000;

typedef struct {
  int wide; /* 1: 512-bit FMAs */
  const float *data;
  size_t count;
  double sink;
} Job;

static void *fma256(void *argument) {
  Job *job = argument;
  __m256 acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps(1.0f + 1e-3f * (float)c);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < FMA_ITERATIONS; i++)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  float out[8];
  __m256 total = acc[0];
  for (int c = 1; c < CHAINS; c++) total = _mm256_add_ps(total, acc[c]);
  _mm256_storeu_ps(out, total);
  job->sink = out[0];
  return NULL;
}

#ifdef __AVX512F__
static void *fma512(void *argument) {
  Job *job = argument;
  __m512 acc[CHAINS];
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps(1.0f + 1e-3f * (float)c);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < FMA_ITERATIONS; i++)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 total = acc[0];
  for (int c = 1; c < CHAINS; c++) total = _mm512_add_ps(total, acc[c]);
  job->sink = _mm512_reduce_add_ps(total);
  return NULL;
}
#endif

static void *read_share(void *argument) {
  Job *job = argument;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i + 32 <= job->count; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(job->data + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(job->data + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(job->data + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(job->data + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  job->sink = out[0];
  return NULL;
}

/* Wall seconds of `threads` threads each running `body` on its own job. */
static double run_threads(int threads, void *(*body)(void *), Job *jobs) {
  pthread_t ids[64];
  double start = now_seconds();
  for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, body, &jobs[t]);
  for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  return now_seconds() - start;
}

static double fma_gflops(int threads, int repeats, void *(*body)(void *), int lanes) {
  Job jobs[64];
  memset(jobs, 0, sizeof jobs);
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    double seconds = run_threads(threads, body, jobs);
    if (seconds < best) best = seconds;
  }
  return 2.0 * lanes * CHAINS * (double)FMA_ITERATIONS * threads / best / 1e9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int repeats = argc > 2 ? atoi(argv[2]) : 3;
  size_t megabytes = argc > 3 ? (size_t)atoi(argv[3]) : 512;
  if (threads < 1 || threads > 64 || repeats < 1 || megabytes < 1) {
    fprintf(stderr, "usage: peak <threads 1..64> [repeats] [megabytes]\n");
    return 1;
  }
  double fma = fma_gflops(threads, repeats, fma256, 8);
  int width = 256;
#ifdef __AVX512F__
  double wide = fma_gflops(threads, repeats, fma512, 16);
  if (wide > fma) fma = wide, width = 512;
#endif
  size_t count = megabytes * (1u << 20) / sizeof(float);
  float *data = aligned_alloc(64, count * sizeof(float));
  if (!data) return 1;
  for (size_t i = 0; i < count; i++) data[i] = (float)(i & 1023);
  Job jobs[64];
  size_t share = count / (size_t)threads / 32 * 32;
  double best = 1e30, sink = 0;
  for (int r = 0; r < repeats; r++) {
    for (int t = 0; t < threads; t++) jobs[t] = (Job){0, data + (size_t)t * share, share, 0};
    double seconds = run_threads(threads, read_share, jobs);
    if (seconds < best) best = seconds;
    for (int t = 0; t < threads; t++) sink += jobs[t].sink;
  }
  double read = (double)share * threads * sizeof(float) / best / 1e9;
  printf("{\"threads\":%d,\"fmaGflops\":%.2f,\"fmaWidth\":%d,\"readGBs\":%.2f,\"readMegabytes\":%zu,\"sink\":%.1f}\n",
         threads, fma, width, read, megabytes, sink > 0 ? 1.0 : 0.0);
  free(data);
  return 0;
}
