/*
 * The row kernels' arithmetic for one vector width, included by row-kernels.c once per instruction set
 * with RK_BYTES (vector bytes: 64 AVX-512, 32 AVX2, 16 SSE2/NEON), RK(name) (a per-set name suffix),
 * RK_TARGET (the function target attribute) and RK_NAME defined. Native-width vectors let GCC keep
 * every comparison in vector registers (wider-than-hardware vectors made it compare lane by lane).
 *
 * Is: float exp (Cephes, <= 2 ulp), log-sum-exp / entropy / softmax-gradient rows, RMSNorm rows and AdamW
 * (double, bit for bit the JS loop), the categorical draw of one token per row of logits (float exp, sums
 * in double), and decode attention over a prompt shared by a group of rows.
 * Is not: SwiGLU (float32, swiglu-body.c).
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
#define row_prefix_attention RK(row_prefix_attention)
#define attention_item_scalar RK(attention_item_scalar)
#define attention_item RK(attention_item)
#define horizontal_sum RK(horizontal_sum)
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

/* Sum of the lanes by halving in registers (a lane-by-lane loop is a serial chain through memory). */
INLINE float horizontal_sum(vf v) {
#if LANES == 16
  v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  v += __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
#elif LANES == 8
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3);
  v += __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1);
#else
  v += __builtin_shufflevector(v, v, 2, 3, 2, 3);
  v += __builtin_shufflevector(v, v, 1, 1, 1, 1);
#endif
  return v[0];
}

/*
 * One (row, head) item with the head dim in CHUNKS vectors; a constant CHUNKS (the common head dims) lets the
 * compiler keep the query and the output accumulators in registers. full: D is exactly CHUNKS vectors.
 */
INLINE void attention_item(const int CHUNKS, const int full, const attention_dims *d, const float *query,
                           const float *prompt_k, const float *prompt_v, const float *own_k, const float *own_v,
                           float *scores, float *o) {
  const int64_t D = d->D, L = d->L, keys = d->L + d->S;
  vf query_chunks[CHUNKS];
  for (int c = 0; c < CHUNKS; c++) {
    int64_t count = D - c * LANES < LANES ? D - c * LANES : LANES;
    query_chunks[c] = full ? load(query + c * LANES) : load_part(query + c * LANES, count, 0.0f);
  }
  float row_max = -INFINITY;
  for (int64_t s = 0; s < keys; s++) {
    const float *k = s < L ? prompt_k + s * D : own_k + (s - L) * D;
    vf acc = splat(0.0f);
    for (int c = 0; c < CHUNKS; c++) {
      int64_t count = D - c * LANES < LANES ? D - c * LANES : LANES;
      acc += query_chunks[c] * (full ? load(k + c * LANES) : load_part(k + c * LANES, count, 0.0f));
    }
    float score = s >= d->first_visible ? horizontal_sum(acc) * d->scale : -INFINITY;
    scores[s] = score;
    if (score > row_max) row_max = score;
  }
  if (row_max == -INFINITY) {
    for (int64_t i = 0; i < D; i++) o[i] = 0.0f;
    return;
  }
  vd totals = (vd){0};
  for (int64_t s = 0; s < keys; s += LANES) {
    int64_t count = keys - s < LANES ? keys - s : LANES;
    vf e = exp_v((count == LANES ? load(scores + s) : load_part(scores + s, count, -INFINITY)) - row_max);
    store_part(scores + s, e, count);
    totals += widen_sum(e);
  }
  const float inverse = (float)(1.0 / lane_total(totals));
  vf acc[CHUNKS];
  for (int c = 0; c < CHUNKS; c++) acc[c] = splat(0.0f);
  for (int64_t s = 0; s < keys; s++) {
    if (scores[s] == 0.0f) continue;
    const float *v = s < L ? prompt_v + s * D : own_v + (s - L) * D;
    const vf p = splat(scores[s]);
    for (int c = 0; c < CHUNKS; c++) {
      int64_t count = D - c * LANES < LANES ? D - c * LANES : LANES;
      acc[c] += p * (full ? load(v + c * LANES) : load_part(v + c * LANES, count, 0.0f));
    }
  }
  for (int c = 0; c < CHUNKS; c++) {
    int64_t count = D - c * LANES < LANES ? D - c * LANES : LANES;
    if (full)
      store(o + c * LANES, acc[c] * inverse);
    else
      store_part(o + c * LANES, acc[c] * inverse, count);
  }
}

/* Head dims without a vector case below: plain scalar loops, same arithmetic. */
INLINE void attention_item_scalar(const attention_dims *d, const float *query, const float *prompt_k,
                                  const float *prompt_v, const float *own_k, const float *own_v, float *scores,
                                  float *o) {
  const int64_t D = d->D, L = d->L, keys = d->L + d->S;
  float row_max = -INFINITY;
  for (int64_t s = 0; s < keys; s++) {
    const float *k = s < L ? prompt_k + s * D : own_k + (s - L) * D;
    float dot = 0.0f;
    for (int64_t i = 0; i < D; i++) dot += query[i] * k[i];
    scores[s] = s >= d->first_visible ? dot * d->scale : -INFINITY;
    if (scores[s] > row_max) row_max = scores[s];
  }
  for (int64_t i = 0; i < D; i++) o[i] = 0.0f;
  if (row_max == -INFINITY) return;
  double total = 0;
  for (int64_t s = 0; s < keys; s++) total += scores[s] = expf(scores[s] - row_max);
  for (int64_t s = 0; s < keys; s++) {
    const float *v = s < L ? prompt_v + s * D : own_v + (s - L) * D;
    for (int64_t i = 0; i < D; i++) o[i] += scores[s] * v[i];
  }
  const float inverse = (float)(1.0 / total);
  for (int64_t i = 0; i < D; i++) o[i] *= inverse;
}

/*
 * Decode attention of rows that share one prompt (tensor/prefix-attention.ts is the spec): for each work item
 * w = b·Hq + h in [begin, end) (row b, query head h, key-value head g = h / (Hq/Hkv)), the query q[w·D..] is
 * scored against the prompt's L keys (prompt_keys[g, s]) and then the row's own S keys (own_keys[b, g, s]):
 * scale·q·k, keys at positions below first_visible masked (prompt key s sits at s, own key s at L + s), a
 * softmax with float exp and a double sum, and out[w·D..] = Σ p·v over the same keys. All masked: zeros.
 */
RK_TARGET void row_prefix_attention(const attention_dims *d, const float *q, const float *prompt_keys,
                                      const float *prompt_values, const float *own_keys, const float *own_values,
                                      float *out, int64_t begin, int64_t end) {
  const int64_t D = d->D, keys = d->L + d->S, rep = d->Hq / d->Hkv;
  const int64_t chunks = (D + LANES - 1) / LANES;
  const int full = D % LANES == 0;
  float stack_scores[1024];
  float *scores = keys <= 1024 ? stack_scores : malloc((size_t)keys * sizeof(float));
  for (int64_t w = begin; w < end; w++) {
    float *o = out + w * D;
    if (!scores) { /* no memory for a long row's scores: NaN, never a silent wrong answer */
      for (int64_t i = 0; i < D; i++) o[i] = NAN;
      continue;
    }
    const int64_t b = w / d->Hq, g = (w % d->Hq) / rep;
    const float *query = q + w * D;
    const float *pk = prompt_keys + g * d->prompt_capacity * D, *ok = own_keys + (b * d->Hkv + g) * d->own_capacity * D;
    const float *pv = prompt_values + g * d->prompt_capacity * D, *ov = own_values + (b * d->Hkv + g) * d->own_capacity * D;
#define ATTENTION_CASE(n)                                                           \
  case n:                                                                           \
    if (full)                                                                       \
      attention_item(n, 1, d, query, pk, pv, ok, ov, scores, o);                    \
    else                                                                            \
      attention_item(n, 0, d, query, pk, pv, ok, ov, scores, o);                    \
    break;
    switch (chunks) {
      ATTENTION_CASE(1)
      ATTENTION_CASE(2)
      ATTENTION_CASE(3)
      ATTENTION_CASE(4)
      ATTENTION_CASE(5)
      ATTENTION_CASE(6)
      ATTENTION_CASE(7)
      ATTENTION_CASE(8)
      ATTENTION_CASE(10)
      ATTENTION_CASE(12)
      ATTENTION_CASE(16)
      ATTENTION_CASE(32)
      default: attention_item_scalar(d, query, pk, pv, ok, ov, scores, o);
    }
#undef ATTENTION_CASE
  }
  if (scores != stack_scores) free(scores);
}

static const row_kernel_set RK(row_kernels) = {
  RK_NAME, row_exp, row_log_sum_exp, row_softmax_grad,
  row_rms_norm_forward, row_rms_norm_backward, row_adamw, row_sample, row_prefix_attention,
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
#undef row_prefix_attention
#undef attention_item_scalar
#undef attention_item
#undef horizontal_sum
#undef divide_v
