/*
 * The row kernels' arithmetic for one vector width, included by row-kernels.c once per instruction set
 * with RK_BYTES (vector bytes: 64 AVX-512, 32 AVX2, 16 SSE2/NEON), RK(name) (a per-set name suffix),
 * RK_TARGET (the function target attribute) and RK_NAME defined. Native-width vectors let GCC keep
 * every comparison in vector registers (wider-than-hardware vectors made it compare lane by lane).
 *
 * Is: float exp (Cephes, <= 2 ulp), log-sum-exp / entropy / softmax-gradient rows, RMSNorm rows and AdamW
 * (double, bit for bit the JS loop), and the categorical draw of one token per row of logits (float exp, sums
 * in double).
 * Is not: SwiGLU (float32, swiglu-body.c) or decode attention (decode-attention-body.c).
 * Is not: threading, dispatch or argument checks (row-kernels.c, row-kernels-addon.c).
 */
#define LANES (RK_BYTES / 4)
#define HALF (RK_BYTES / 8)
#define vf RK(vf)
#define vi RK(vi)
#define vf8 RK(vf8)
#define vd RK(vd)
#define vi8 RK(vi8)
#define iota RK(iota)
#define splat RK(splat)
#define pick RK(pick)
#define load RK(load)
#define store RK(store)
#define load_part RK(load_part)
#define store_part RK(store_part)
#define widen_sum RK(widen_sum)
#define lane_total RK(lane_total)
#define exp_v RK(exp_v)
#define row_exp RK(row_exp)
#define row_log_sum_exp RK(row_log_sum_exp)
#define row_softmax_grad RK(row_softmax_grad)
#define row_rms_norm_forward RK(row_rms_norm_forward)
#define row_rms_norm_backward RK(row_rms_norm_backward)
#define row_adamw RK(row_adamw)
#define row_sample RK(row_sample)
#define divide_v RK(divide_v)

typedef float vf __attribute__((vector_size(RK_BYTES)));
typedef int32_t vi __attribute__((vector_size(RK_BYTES)));
typedef float vf8 __attribute__((vector_size(RK_BYTES / 2)));
typedef double vd __attribute__((vector_size(RK_BYTES)));
typedef int32_t vi8 __attribute__((vector_size(RK_BYTES / 2)));

INLINE vi iota(void) {
  vi lanes;
  for (int i = 0; i < LANES; i++) lanes[i] = i;
  return lanes;
}
INLINE vf splat(float value) { return (vf){0} + value; }
INLINE vf pick(vi mask, vf yes, vf no) { return (vf)(((vi)yes & mask) | ((vi)no & ~mask)); }
INLINE vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
INLINE void store(float *p, vf v) { memcpy(p, &v, sizeof v); }
/* The first `count` lanes of p (count < LANES), `fill` elsewhere. */
INLINE vf load_part(const float *p, int64_t count, float fill) {
  if (count >= LANES) return load(p); /* the common case: one wide load, no lane-by-lane copy */
  float lanes[LANES];
  for (int i = 0; i < LANES; i++) lanes[i] = i < count ? p[i] : fill;
  return load(lanes);
}
INLINE void store_part(float *p, vf v, int64_t count) {
  if (count >= LANES) {
    store(p, v);
    return;
  }
  float lanes[LANES];
  store(lanes, v);
  for (int64_t i = 0; i < count; i++) p[i] = lanes[i];
}
/* Sum of the 16 float lanes, added in double (two 8-lane halves converted first). */
INLINE vd widen_sum(vf v) {
  vf8 low, high;
  memcpy(&low, &v, sizeof low);
  memcpy(&high, (const char *)&v + sizeof low, sizeof high);
  return __builtin_convertvector(low, vd) + __builtin_convertvector(high, vd);
}
INLINE double lane_total(vd v) {
  double total = 0;
  for (int i = 0; i < HALF; i++) total += v[i];
  return total;
}

#include "vector-exp.c"

RK_TARGET void row_exp(const float *x, float *out, int64_t n) {
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES) store(out + i, exp_v(load(x + i)));
  if (i < n) store_part(out + i, exp_v(load_part(x + i, n - i, 0.0f)), n - i);
}

/*
 * Per row r of logits [rows, V], without entropy (NULL): shift = the row max when finite, else 0, and
 * log_total = log Σ e^(x − shift), as logSoftmaxGather. With entropy: shift = the row max whatever it is
 * and entropy = log_total − Σ e^(x − max)(x − max) / Σ e^(x − max), as entropyFromLogits.
 */
RK_TARGET void row_log_sum_exp(const float *logits, int64_t V, float *shift, double *log_total, float *entropy,
                                 int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    const float *row = logits + r * V;
    /*
     * The max skips NaN. The JS loops differ there (logSoftmaxGather's max becomes NaN, the entropy's
     * skips it) but a NaN logit makes the row's sum, and so every output of the row, NaN either way.
     */
    vf best = splat(-INFINITY);
    for (int64_t i = 0; i < V; i += LANES) {
      vf x = i + LANES <= V ? load(row + i) : load_part(row + i, V - i, -INFINITY);
      best = pick(x > best, x, best);
    }
    float row_max = -INFINITY;
    for (int i = 0; i < LANES; i++)
      if (best[i] > row_max) row_max = best[i];
    /* The entropy uses x − max even when max is not finite (then it is NaN, as in the JS loop). */
    float entropy_shift = entropy ? row_max : (isfinite(row_max) ? row_max : 0.0f);
    vd total = (vd){0}, weighted = (vd){0};
    for (int64_t i = 0; i < V; i += LANES) {
      int64_t count = V - i < LANES ? V - i : LANES;
      vi valid = iota() < (int32_t)count;
      vf shifted = (count == LANES ? load(row + i) : load_part(row + i, count, 0.0f)) - entropy_shift;
      vf e = exp_v(shifted);
      total += widen_sum(pick(valid, e, splat(0.0f)));
      if (entropy) weighted += widen_sum(pick(valid, e * shifted, splat(0.0f)));
    }
    double sum = lane_total(total);
    log_total[r] = log(sum);
    shift[r] = entropy_shift;
    if (entropy) entropy[r] = (float)(log_total[r] - lane_total(weighted) / sum);
  }
}

/* out[r, i] = −row_grad[r]·e^(x − shift − log_total) (the softmax part of log-softmax-gather's gradient). */
RK_TARGET void row_softmax_grad(const float *logits, int64_t V, const float *shift, const double *log_total,
                                  const float *row_grad, float *out, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    float gr = row_grad[r];
    if (gr == 0.0f) continue;
    const float *row = logits + r * V;
    float row_shift = shift[r];
    float offset = (float)log_total[r];
    for (int64_t i = 0; i < V; i += LANES) {
      int64_t count = V - i < LANES ? V - i : LANES;
      vf x = count == LANES ? load(row + i) : load_part(row + i, count, 0.0f);
      store_part(out + r * V + i, -gr * exp_v((x - row_shift) - offset), count);
    }
  }
}

/* RMSNorm forward over rows [begin, end) of x [rows, D]: out = x·s·w with s = 1/√(mean(x²) + eps). */
RK_TARGET void row_rms_norm_forward(const float *x, const float *w, int64_t D, double eps, float *out,
                                      float *inverse_rms, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    const float *row = x + r * D;
    vd squares = (vd){0};
    for (int64_t i = 0; i < D; i += LANES) {
      vf v = i + LANES <= D ? load(row + i) : load_part(row + i, D - i, 0.0f);
      squares += widen_sum(v * v);
    }
    double scale = 1.0 / sqrt(lane_total(squares) / (double)D + eps);
    inverse_rms[r] = (float)scale;
    vf s = splat((float)scale);
    for (int64_t i = 0; i < D; i += LANES) {
      int64_t count = D - i < LANES ? D - i : LANES;
      store_part(out + r * D + i, load_part(row + i, count, 0.0f) * s * load_part(w + i, count, 0.0f), count);
    }
  }
}

/* RMSNorm backward: grad_x rows in place; grad_w_part (D floats, zeroed) gets this range's Σ g·n. */
RK_TARGET void row_rms_norm_backward(const float *x, const float *w, const float *inverse_rms, const float *g,
                                       int64_t D, float *grad_x, float *grad_w_part, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    const float *row = x + r * D, *grow = g + r * D;
    vf s = splat(inverse_rms[r]);
    vd dot = (vd){0};
    for (int64_t i = 0; i < D; i += LANES) {
      int64_t count = D - i < LANES ? D - i : LANES;
      vf normalized = load_part(row + i, count, 0.0f) * s, gi = load_part(grow + i, count, 0.0f);
      store_part(grad_w_part + i, load_part(grad_w_part + i, count, 0.0f) + gi * normalized, count);
      dot += widen_sum(gi * load_part(w + i, count, 0.0f) * normalized);
    }
    vf mean = splat((float)(lane_total(dot) / (double)D));
    for (int64_t i = 0; i < D; i += LANES) {
      int64_t count = D - i < LANES ? D - i : LANES;
      vf xi = load_part(row + i, count, 0.0f);
      vf dx = s * (load_part(grow + i, count, 0.0f) * load_part(w + i, count, 0.0f) - xi * s * mean);
      store_part(grad_x + r * D + i, dx, count);
    }
  }
}

RK_TARGET void row_adamw(float *p, const float *g, float *m,
                                                                          float *v, const adamw_scalars *k,
                                                                          int64_t begin, int64_t end) {
  const double beta1 = k->beta1, beta2 = k->beta2, one_minus1 = 1 - k->beta1, one_minus2 = 1 - k->beta2;
  for (int64_t i = begin; i < end; i++) {
    double gi = g[i];
    float mi = (float)(beta1 * m[i] + one_minus1 * gi);
    float vi_ = (float)(beta2 * v[i] + one_minus2 * gi * gi);
    m[i] = mi;
    v[i] = vi_;
    double denominator = sqrt((double)vi_) / k->bias_correction2_sqrt + k->epsilon;
    p[i] = (float)(p[i] * k->decay_factor - (k->step_size * mi) / denominator);
  }
}

/*
 * Per row r of logits [rows, V]: one draw from softmax(x / temperature) by inverse CDF with uniforms[r], as
 * sampling/logits.ts's drawFromLogits on the scaled row: with e = e^(x/T − max), the first i whose running
 * Σ e passes uniforms[r]·Σ e (a −Inf logit is never drawn), and logprobs[r] = x_i/T − (max + log Σ e).
 * Sums are in double; the running sum is taken a vector at a time and only the crossing vector lane by lane.
 * A row whose max is not finite (NaN total, as in the JS loop) gives the last index not −Inf and a NaN logprob.
 */
/* x / temperature rounded to float32, the division in double as applyTemperature's (T = 1: x itself). */
INLINE vf divide_v(vf x, double temperature) {
  if (temperature == 1.0) return x;
  vf8 low, high;
  memcpy(&low, &x, sizeof low);
  memcpy(&high, (const char *)&x + sizeof low, sizeof high);
  low = __builtin_convertvector(__builtin_convertvector(low, vd) / temperature, vf8);
  high = __builtin_convertvector(__builtin_convertvector(high, vd) / temperature, vf8);
  memcpy(&x, &low, sizeof low);
  memcpy((char *)&x + sizeof low, &high, sizeof high);
  return x;
}

RK_TARGET void row_sample(const float *logits, int64_t V, double temperature, const double *uniforms, int32_t *ids,
                            double *logprobs, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; r++) {
    const float *row = logits + r * V;
    vf best = splat(-INFINITY);
    for (int64_t i = 0; i < V; i += LANES) {
      vf x = divide_v(i + LANES <= V ? load(row + i) : load_part(row + i, V - i, -INFINITY), temperature);
      best = pick(x > best, x, best);
    }
    float row_max = -INFINITY;
    for (int i = 0; i < LANES; i++)
      if (best[i] > row_max) row_max = best[i];
    int32_t id = -1;
    double log_normalizer = NAN;
    if (isfinite(row_max)) {
      vd totals = (vd){0};
      for (int64_t i = 0; i < V; i += LANES) {
        int64_t count = V - i < LANES ? V - i : LANES;
        vf e = exp_v(divide_v(count == LANES ? load(row + i) : load_part(row + i, count, -INFINITY), temperature) - row_max);
        totals += widen_sum(e);
      }
      double total = lane_total(totals);
      log_normalizer = row_max + log(total);
      double threshold = uniforms[r] * total, running = 0;
      for (int64_t i = 0; i < V && id < 0; i += LANES) {
        int64_t count = V - i < LANES ? V - i : LANES;
        vf e = exp_v(divide_v(count == LANES ? load(row + i) : load_part(row + i, count, -INFINITY), temperature) - row_max);
        double block = lane_total(widen_sum(e));
        if (!(threshold < running + block)) {
          running += block;
          continue;
        }
        for (int64_t lane = 0; lane < count; lane++) {
          running += e[lane];
          if (threshold < running && row[i + lane] != -INFINITY) {
            id = (int32_t)(i + lane);
            break;
          }
        }
      }
    }
    if (id < 0) { /* rounding left the threshold above the mass, or the row was not finite: the last drawable */
      id = 0;
      for (int64_t i = V - 1; i >= 0; i--)
        if (row[i] != -INFINITY) {
          id = (int32_t)i;
          break;
        }
    }
    ids[r] = id;
    logprobs[r] = (double)(float)((double)row[id] / temperature) - log_normalizer;
  }
}

static const row_kernel_set RK(row_kernels) = {
  RK_NAME, row_exp, row_log_sum_exp, row_softmax_grad,
  row_rms_norm_forward, row_rms_norm_backward, row_adamw, row_sample,
};

#undef LANES
#undef HALF
#undef vf
#undef vi
#undef vf8
#undef vd
#undef vi8
#undef iota
#undef splat
#undef pick
#undef load
#undef store
#undef load_part
#undef store_part
#undef widen_sum
#undef lane_total
#undef exp_v
#undef row_exp
#undef row_log_sum_exp
#undef row_softmax_grad
#undef row_rms_norm_forward
#undef row_rms_norm_backward
#undef row_adamw
#undef row_sample
#undef divide_v
