/*
 * Decode attention's arithmetic for one vector width, included by decode-attention.c once per instruction set
 * with DA_BYTES (vector bytes: 64 AVX-512, 32 AVX2, 16 SSE2/NEON), DA(name) (a per-set name suffix) and
 * DA_TARGET (the function target attribute) defined.
 *
 * Is: per (row, query head), scale·q·k over the prompt's keys then the row's own keys, a softmax with the
 * float exp of vector-exp.c and a double sum, and Σ p·v. Each q·k is one chain of chunk products summed
 * lane-wise then across lanes (the same floats whatever the blocking below); p·v sums keys in order.
 * Is not: threading or argument checks (decode-attention.c, decode-attention-addon.c).
 */
#define LANES (DA_BYTES / 4)
#define HALF (DA_BYTES / 8)
#define vf DA(vf)
#define vi DA(vi)
#define vf8 DA(vf8)
#define vd DA(vd)
#define splat DA(splat)
#define pick DA(pick)
#define load DA(load)
#define store DA(store)
#define load_part DA(load_part)
#define store_part DA(store_part)
#define widen_sum DA(widen_sum)
#define lane_total DA(lane_total)
#define exp_v DA(exp_v)
#define horizontal_sum DA(horizontal_sum)
#define key_chunk DA(key_chunk)
#define score_keys DA(score_keys)
#define score_part DA(score_part)
#define attention_item DA(attention_item)
#define attention_item_scalar DA(attention_item_scalar)
#define decode_attention DA(decode_attention)

#define KEY_BLOCK 4     /* keys scored at once (score_keys) */
#define VALUE_BLOCK 8   /* output chunks summed at once (attention_item) */

typedef float vf __attribute__((vector_size(DA_BYTES)));
typedef int32_t vi __attribute__((vector_size(DA_BYTES)));
typedef float vf8 __attribute__((vector_size(DA_BYTES / 2)));
typedef double vd __attribute__((vector_size(DA_BYTES)));

INLINE vf splat(float value) { return (vf){0} + value; }
INLINE vf pick(vi mask, vf yes, vf no) { return (vf)(((vi)yes & mask) | ((vi)no & ~mask)); }
INLINE vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
INLINE void store(float *p, vf v) { memcpy(p, &v, sizeof v); }
/* The first `count` lanes of p (count < LANES), `fill` elsewhere. */
INLINE vf load_part(const float *p, int64_t count, float fill) {
  if (count >= LANES) return load(p);
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
/* The lanes added in double (the two halves converted first). */
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

/* Chunk c of a D-float row: a whole vector, or (full = 0) the row's tail with zeros after it. */
INLINE vf key_chunk(const int full, const float *row, int c, int64_t D) {
  return full ? load(row + c * LANES) : load_part(row + c * LANES, D - c * LANES, 0.0f);
}

/*
 * scores[s] = scale·(query · keys[s]) for s in [0, count), keys D floats apart. KEY_BLOCK keys go at once, each
 * with its own accumulator: one key's sum is a chain of CHUNKS dependent adds plus the lane sum, so scoring keys
 * one by one waits on that latency, while independent chains overlap. No software prefetch: asking for the
 * keys 8 ahead and each block's values (as this kernel did) cost 30-40% with the rows in cache and gained
 * nothing from DRAM, where the hardware prefetcher keeps up (Zen3, 2 threads, the 25M model's decode shapes).
 */
INLINE void score_keys(const int CHUNKS, const int full, const vf *query_chunks, int64_t D, const float *keys,
                       int64_t count, float scale, float *scores) {
  int64_t s = 0;
  for (; s + KEY_BLOCK <= count; s += KEY_BLOCK) {
    const float *k = keys + s * D;
    vf acc[KEY_BLOCK];
    for (int j = 0; j < KEY_BLOCK; j++) acc[j] = splat(0.0f);
    for (int c = 0; c < CHUNKS; c++)
      for (int j = 0; j < KEY_BLOCK; j++) acc[j] += query_chunks[c] * key_chunk(full, k + j * D, c, D);
    for (int j = 0; j < KEY_BLOCK; j++) scores[s + j] = horizontal_sum(acc[j]) * scale;
  }
  for (; s < count; s++) {
    vf acc = splat(0.0f);
    for (int c = 0; c < CHUNKS; c++) acc += query_chunks[c] * key_chunk(full, keys + s * D, c, D);
    scores[s] = horizontal_sum(acc) * scale;
  }
}

/* Keys [0, count) of one part whose first key sits at position `offset`: the masked ones −∞, the rest scored. */
INLINE void score_part(const int CHUNKS, const int full, const vf *query_chunks, const attention_dims *d,
                       const float *keys, int64_t count, int64_t offset, float *scores) {
  int64_t hidden = d->first_visible - offset;
  hidden = hidden < 0 ? 0 : hidden > count ? count : hidden;
  for (int64_t s = 0; s < hidden; s++) scores[s] = -INFINITY;
  score_keys(CHUNKS, full, query_chunks, d->D, keys + hidden * d->D, count - hidden, d->scale, scores + hidden);
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
  for (int c = 0; c < CHUNKS; c++) query_chunks[c] = key_chunk(full, query, c, D);
  score_part(CHUNKS, full, query_chunks, d, prompt_k, L, 0, scores);
  score_part(CHUNKS, full, query_chunks, d, own_k, d->S, L, scores + L);
  /* The max skips NaN scores (as `score > max` does); a row of NaN or −∞ only gives zeros. */
  vf best = splat(-INFINITY);
  for (int64_t s = 0; s < keys; s += LANES) {
    vf x = s + LANES <= keys ? load(scores + s) : load_part(scores + s, keys - s, -INFINITY);
    best = pick(x > best, x, best);
  }
  float row_max = -INFINITY;
  for (int i = 0; i < LANES; i++)
    if (best[i] > row_max) row_max = best[i];
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
  /*
   * The output VALUE_BLOCK chunks at a time in named accumulators (an array of them was kept in memory, a
   * store-to-load round trip per key and chunk); each chunk still sums the keys in order.
   */
  for (int c0 = 0; c0 < CHUNKS; c0 += VALUE_BLOCK) {
    vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    for (int64_t s = 0; s < keys; s++) {
      if (scores[s] == 0.0f) continue;
      const float *v = s < L ? prompt_v + s * D : own_v + (s - L) * D;
      const vf p = splat(scores[s]);
#define VALUE_STEP(j, a) \
  if (c0 + j < CHUNKS) a += p * key_chunk(full, v, c0 + j, D);
      VALUE_STEP(0, a0) VALUE_STEP(1, a1) VALUE_STEP(2, a2) VALUE_STEP(3, a3)
      VALUE_STEP(4, a4) VALUE_STEP(5, a5) VALUE_STEP(6, a6) VALUE_STEP(7, a7)
#undef VALUE_STEP
    }
    const vf tile[VALUE_BLOCK] = {a0, a1, a2, a3, a4, a5, a6, a7};
    for (int j = 0; j < VALUE_BLOCK && c0 + j < CHUNKS; j++) {
      if (full)
        store(o + (c0 + j) * LANES, tile[j] * inverse);
      else
        store_part(o + (c0 + j) * LANES, tile[j] * inverse, D - (c0 + j) * LANES);
    }
  }
}

/* Head dims without a vector case below: plain scalar loops, the same arithmetic. */
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
 * The vector cases: the common head dims as a constant number of chunks, each whole (full) or with a tail, each
 * its own function. Inlined into one function (as they were), the 24 cases took the compiler's register passes
 * minutes per instruction set at install; apart they take seconds, do the same arithmetic in the same order, and
 * cost one call per (row, head) item.
 */
#define ATTENTION_CASES                                                                                         \
  ATTENTION_CASE(1) ATTENTION_CASE(2) ATTENTION_CASE(3) ATTENTION_CASE(4) ATTENTION_CASE(5) ATTENTION_CASE(6) \
  ATTENTION_CASE(7) ATTENTION_CASE(8) ATTENTION_CASE(10) ATTENTION_CASE(12) ATTENTION_CASE(16) ATTENTION_CASE(32)
#define ATTENTION_ITEM_FUNCTION(name, n, full)                                                                    \
  static DA_TARGET __attribute__((noinline)) void name(const attention_dims *d, const float *query,               \
                                                       const float *prompt_k, const float *prompt_v,             \
                                                       const float *own_k, const float *own_v, float *scores,    \
                                                       float *o) {                                               \
    attention_item(n, full, d, query, prompt_k, prompt_v, own_k, own_v, scores, o);                               \
  }
#define ATTENTION_CASE(n)                                  \
  ATTENTION_ITEM_FUNCTION(DA(attention_item_full_##n), n, 1) \
  ATTENTION_ITEM_FUNCTION(DA(attention_item_part_##n), n, 0)
ATTENTION_CASES
#undef ATTENTION_CASE
#undef ATTENTION_ITEM_FUNCTION

/*
 * Decode attention of rows that share one prompt (tensor/prefix-attention.ts is the spec): each work item is
 * one (row b, query head h) with key-value head g = h / (Hq/Hkv), numbered u = (g·rows + b)·(Hq/Hkv) + h mod
 * (Hq/Hkv) so that a thread's consecutive items share head g's prompt keys and values (read from memory once,
 * then from cache). The query q[(b·Hq + h)·D..] is scored against the prompt's L keys (prompt_keys[g, s]), then
 * the row's own S keys (own_keys[b, g, s]); with row offsets, row b's prompt starts at its offset: scale·q·k, keys at positions below first_visible masked (prompt key
 * s sits at s, own key s at L + s), a softmax with float exp and a double sum, and out[(b·Hq + h)·D..] = Σ p·v
 * over the same keys. All masked: zeros.
 */
DA_TARGET void decode_attention(const attention_dims *d, const float *q, const float *prompt_keys,
                                const float *prompt_values, const float *own_keys, const float *own_values,
                                float *out, int64_t begin, int64_t end) {
  const int64_t D = d->D, keys = d->L + d->S, rep = d->Hq / d->Hkv;
  const int64_t chunks = (D + LANES - 1) / LANES;
  const int full = D % LANES == 0;
  float stack_scores[1024];
  float *scores = keys <= 1024 ? stack_scores : malloc((size_t)keys * sizeof(float));
  for (int64_t u = begin; u < end; u++) {
    const int64_t g = u / (d->rows * rep), b = u / rep % d->rows, h = g * rep + u % rep;
    float *o = out + (b * d->Hq + h) * D;
    if (!scores) { /* no memory for a long row's scores: NaN, never a silent wrong answer */
      for (int64_t i = 0; i < D; i++) o[i] = NAN;
      continue;
    }
    const float *query = q + (b * d->Hq + h) * D;
    const int64_t key_at = d->key_offsets ? d->key_offsets[b] : 0, value_at = d->value_offsets ? d->value_offsets[b] : 0;
    const float *pk = prompt_keys + key_at + g * d->prompt_capacity * D;
    const float *pv = prompt_values + value_at + g * d->prompt_capacity * D;
    const float *ok = own_keys + (b * d->Hkv + g) * d->own_capacity * D;
    const float *ov = own_values + (b * d->Hkv + g) * d->own_capacity * D;
#define ATTENTION_CASE(n)                                                                        \
  case n:                                                                                        \
    (full ? DA(attention_item_full_##n) : DA(attention_item_part_##n))(d, query, pk, pv, ok, ov, scores, o); \
    break;
    switch (chunks) {
      ATTENTION_CASES
      default: attention_item_scalar(d, query, pk, pv, ok, ov, scores, o);
    }
#undef ATTENTION_CASE
  }
  if (scores != stack_scores) free(scores);
}

#undef ATTENTION_CASES
#undef KEY_BLOCK
#undef VALUE_BLOCK
#undef LANES
#undef HALF
#undef vf
#undef vi
#undef vf8
#undef vd
#undef splat
#undef pick
#undef load
#undef store
#undef load_part
#undef store_part
#undef widen_sum
#undef lane_total
#undef exp_v
#undef horizontal_sum
#undef key_chunk
#undef score_keys
#undef score_part
#undef attention_item
#undef attention_item_scalar
#undef decode_attention
