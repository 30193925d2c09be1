/*
 * Training attention and RoPE arithmetic for one vector width, included by attention.c once per instruction
 * set with AK_BYTES (vector bytes), AK(name) (a per-set name suffix), AK_TARGET and AK_NAME defined.
 *
 * Is: two register-tiled loops that carry every product, on blocks of ROWS query rows:
 * `rows_by_columns` (scores = rows · kᵀ from a transposed, zero-padded copy of the group's keys: ROWS × 2
 * vectors of keys per tile) and `weighted_rows` (ROWS output rows, each Σ coefficient · row of x: p·v, dS·k,
 * and, with the coefficients read down a column, Pᵀ·dO and dSᵀ·q). The softmax uses the float exp of
 * vector-exp.c and float sums.
 * Is not: threading or dispatch (attention.c), or masks other than causal, key mask and document ids.
 */
#define LANES (AK_BYTES / 4)
#define COLUMNS (2 * LANES) /* keys per score tile; padded key rows are a multiple of it */
#define ROWS 4              /* query rows per tile */
#define vf AK(vf)
#define vi AK(vi)
#define splat AK(splat)
#define splat_from AK(splat_from)
#define pick AK(pick)
#define load AK(load)
#define store AK(store)
#define load_part AK(load_part)
#define store_part AK(store_part)
#define exp_v AK(exp_v)
#define lane_sum AK(lane_sum)
#define rows_by_columns AK(rows_by_columns)
#define weighted_rows AK(weighted_rows)
#define transpose_keys AK(transpose_keys)
#define key_hidden AK(key_hidden)
#define scaled_scores AK(scaled_scores)
#define recomputed_probabilities AK(recomputed_probabilities)
#define visible_keys AK(visible_keys)
#define attention_forward AK(attention_forward)
#define attention_backward AK(attention_backward)
#define rope_rows AK(rope_rows)

typedef float vf __attribute__((vector_size(AK_BYTES)));
typedef int32_t vi __attribute__((vector_size(AK_BYTES)));

INLINE vf splat(float value) { return (vf){0} + value; }
/* *p in every lane, straight from memory where the instruction set has it: GCC built splat(*p) as a load plus a
 * register broadcast, which takes a floating-point port from the multiply-adds beside it. */
INLINE AK_TARGET vf splat_from(const float *p) {
#if AK_BYTES == 64
  return (vf)_mm512_set1_ps(*p);
#elif AK_BYTES == 32
  return (vf)_mm256_broadcast_ss(p);
#else
  return splat(*p);
#endif
}
INLINE vf pick(vi mask, vf yes, vf no) { return (vf)(((vi)yes & mask) | ((vi)no & ~mask)); }
INLINE vf load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
INLINE void store(float *p, vf v) { memcpy(p, &v, sizeof v); }
/* The first min(count, LANES) lanes of p, lane by lane (only an odd head dim's tail uses these), zeros elsewhere. */
INLINE vf load_part(const float *p, int64_t count) {
  float lanes[LANES] = {0};
  for (int64_t i = 0; i < count && i < LANES; i++) lanes[i] = p[i];
  return load(lanes);
}
INLINE void store_part(float *p, vf v, int64_t count) {
  float lanes[LANES];
  store(lanes, v);
  for (int64_t i = 0; i < count && i < LANES; i++) p[i] = lanes[i];
}
INLINE float lane_sum(vf v) {
  float total = 0.0f;
  for (int i = 0; i < LANES; i++) total += v[i];
  return total;
}

#include "vector-exp.c"

/*
 * scores[r·stride + s] = Σ_d rows[r][d] · columns[d·stride + s] for r < ROWS and s < `width` (a multiple of
 * COLUMNS, ≤ stride): `columns` is a [D, stride] transposed copy, so each tile is ROWS × 2 vectors of keys.
 */
INLINE AK_TARGET void rows_by_columns(const float *const rows[ROWS], const float *columns, int64_t stride, int64_t D,
                            int64_t width, float *scores) {
  for (int64_t s = 0; s < width; s += COLUMNS) {
    vf a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
    const float *column = columns + s;
    for (int64_t d = 0; d < D; d++, column += stride) {
      vf c0 = load(column), c1 = load(column + LANES);
      vf r0 = splat_from(rows[0] + d), r1 = splat_from(rows[1] + d);
      vf r2 = splat_from(rows[2] + d), r3 = splat_from(rows[3] + d);
      a00 += r0 * c0, a01 += r0 * c1, a10 += r1 * c0, a11 += r1 * c1;
      a20 += r2 * c0, a21 += r2 * c1, a30 += r3 * c0, a31 += r3 * c1;
    }
    store(scores + s, a00), store(scores + s + LANES, a01);
    store(scores + stride + s, a10), store(scores + stride + s + LANES, a11);
    store(scores + 2 * stride + s, a20), store(scores + 2 * stride + s + LANES, a21);
    store(scores + 3 * stride + s, a30), store(scores + 3 * stride + s + LANES, a31);
  }
}

/*
 * outs[j][d] (+)= Σ_{i < count} coefficients[j·row_step + i·column_step] · x[i·x_stride + d] for j < ROWS and
 * d < D: the output tile is ROWS × 2 vectors of d, the sum runs down i. add == 0 overwrites outs.
 */
INLINE AK_TARGET void weighted_rows(int64_t count, const float *coefficients, int64_t row_step, int64_t column_step,
                          const float *x, int64_t x_stride, int64_t D, float *const outs[ROWS], int add) {
  int64_t d = 0;
  for (; d + COLUMNS <= D; d += COLUMNS) {
    vf a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
    const float *c = coefficients, *row = x + d;
    for (int64_t i = 0; i < count; i++, c += column_step, row += x_stride) {
      vf x0 = load(row), x1 = load(row + LANES);
      vf c0 = splat_from(c), c1 = splat_from(c + row_step);
      vf c2 = splat_from(c + 2 * row_step), c3 = splat_from(c + 3 * row_step);
      a00 += c0 * x0, a01 += c0 * x1, a10 += c1 * x0, a11 += c1 * x1;
      a20 += c2 * x0, a21 += c2 * x1, a30 += c3 * x0, a31 += c3 * x1;
    }
    vf tile[ROWS][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
    for (int j = 0; j < ROWS; j++) {
      float *o = outs[j] + d;
      if (add) tile[j][0] += load(o), tile[j][1] += load(o + LANES);
      store(o, tile[j][0]), store(o + LANES, tile[j][1]);
    }
  }
  for (; d < D; d += LANES) { /* the tail of an odd head dim, one partial vector at a time */
    int64_t n = D - d;
    vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    const float *c = coefficients, *row = x + d;
    for (int64_t i = 0; i < count; i++, c += column_step, row += x_stride) {
      vf x0 = load_part(row, n);
      a0 += splat(c[0]) * x0, a1 += splat(c[row_step]) * x0;
      a2 += splat(c[2 * row_step]) * x0, a3 += splat(c[3 * row_step]) * x0;
    }
    vf tile[ROWS] = {a0, a1, a2, a3};
    for (int j = 0; j < ROWS; j++) {
      if (add) tile[j] += load_part(outs[j] + d, n);
      store_part(outs[j] + d, tile[j], n);
    }
  }
}

/*
 * columns[d·stride + s] = rows[s·row_stride + d] for s < S, and 0 for S ≤ s < stride. Rows are read whole, in
 * order: reading down a column instead strides by row_stride (2 KiB in [B, T, heads, D]), which maps every
 * read to the same few L1 sets and made the copy a seventh of the backward.
 */
INLINE void transpose_keys(const float *rows, int64_t row_stride, int64_t S, int64_t D, int64_t stride,
                           float *columns) {
  for (int64_t s = 0; s < S; s++) {
    const float *row = rows + s * row_stride;
    for (int64_t d = 0; d < D; d++) columns[d * stride + s] = row[d];
  }
  for (int64_t d = 0; d < D; d++)
    for (int64_t s = S; s < stride; s++) columns[d * stride + s] = 0.0f;
}

/* True when key s is hidden from query t of batch row b by the key mask or the document ids. */
INLINE int key_hidden(const attention_geometry *g, int64_t b, int64_t t, int64_t s) {
  if (g->key_mask && g->key_mask[b * g->S + s] == 0) return 1;
  return g->segment_ids && g->segment_ids[b * g->S + s] != g->segment_ids[b * g->S + g->offset + t];
}

/*
 * Row t's raw scores (entries [0, width)) → scale·score where visible, −∞ elsewhere; returns the row max.
 * `visible` is the causal limit (keys at or past it are hidden). Without masks the max is taken in the same
 * pass; a key mask or document ids are applied by a per-key pass first.
 */
INLINE float scaled_scores(const attention_geometry *g, int64_t b, int64_t t, int64_t visible, int64_t width,
                           float *row) {
  const int masked = g->key_mask || g->segment_ids;
  vf best = splat(-INFINITY);
  vi lane;
  for (int i = 0; i < LANES; i++) lane[i] = i;
  for (int64_t s = 0; s < width; s += LANES) {
    vf value = pick(lane + (int32_t)s < (int32_t)visible, load(row + s) * g->scale, splat(-INFINITY));
    store(row + s, value);
    best = pick(value > best, value, best);
  }
  if (masked) {
    for (int64_t s = 0; s < visible; s++)
      if (key_hidden(g, b, t, s)) row[s] = -INFINITY;
    best = splat(-INFINITY);
    for (int64_t s = 0; s < width; s += LANES) {
      vf value = load(row + s);
      best = pick(value > best, value, best);
    }
  }
  float max = -INFINITY;
  for (int i = 0; i < LANES; i++) max = best[i] > max ? best[i] : max;
  return max;
}

/*
 * The backward's probabilities of row t, e^(scale·score − lse) (0 where hidden), in place over its raw scores
 * (entries [0, width)); returns Σ p·dp. One pass (no max: lse is known); a key mask or document ids first set
 * hidden raw scores to −∞, so masked and plain rows share the pass's arithmetic (and its fused multiply-adds).
 */
INLINE float recomputed_probabilities(const attention_geometry *g, int64_t b, int64_t t, int64_t visible,
                                      int64_t width, float lse, float *row, const float *dp) {
  if (g->key_mask || g->segment_ids)
    for (int64_t s = 0; s < visible; s++)
      if (key_hidden(g, b, t, s)) row[s] = -INFINITY;
  vf dot = {0};
  vi lane;
  for (int i = 0; i < LANES; i++) lane[i] = i;
  for (int64_t s = 0; s < width; s += LANES) {
    vf e = exp_v(pick(lane + (int32_t)s < (int32_t)visible, load(row + s) * g->scale - lse, splat(-INFINITY)));
    store(row + s, e);
    dot += e * load(dp + s);
  }
  return lane_sum(dot);
}

/* The causal limit of query t: keys s < this may be visible (clamped to [0, S]). */
INLINE int64_t visible_keys(const attention_geometry *g, int64_t t) {
  if (!g->causal) return g->S;
  const int64_t limit = g->offset + t + 1;
  return limit < 0 ? 0 : limit > g->S ? g->S : limit;
}
#define ROUND_UP(n) (((n) + COLUMNS - 1) / COLUMNS * COLUMNS)

/*
 * Forward items w = b·Hq + h: out = softmax(scale·q·kᵀ + mask)·v over the visible keys, and the row's
 * log-sum-exp (max + log Σ e^(x − max)) kept for the backward; a row that sees no key gets zeros and +∞,
 * which makes every recomputed probability e^(x − ∞) = 0.
 */
AK_TARGET int attention_forward(const attention_geometry *g, const float *q, const float *k, const float *v,
                                float *out, float *log_sum_exp, int64_t begin, int64_t end) {
  const int64_t D = g->D, T = g->T, rep = g->Hq / g->Hkv, stride = ROUND_UP(g->S);
  float *scratch = malloc(((size_t)D * (size_t)stride + ROWS * (size_t)stride + (size_t)D) * sizeof(float) + 64);
  if (!scratch) return -1;
  float *columns = scratch, *probabilities = columns + D * stride, *spare = probabilities + ROWS * stride;
  for (int64_t w = begin; w < end; w++) {
    const int64_t b = w / g->Hq, h = w % g->Hq;
    const float *keys = k + b * g->kv_strides[0] + (h / rep) * g->kv_strides[1];
    const float *values = v + b * g->kv_strides[0] + (h / rep) * g->kv_strides[1];
    const int64_t q_base = b * g->q_strides[0] + h * g->q_strides[1];
    transpose_keys(keys, g->kv_strides[2], g->S, D, stride, columns);
    for (int64_t t0 = 0; t0 < T; t0 += ROWS) {
      const int64_t rows = T - t0 < ROWS ? T - t0 : ROWS;
      const float *query[ROWS];
      float *outs[ROWS];
      for (int r = 0; r < ROWS; r++) {
        query[r] = q + q_base + (t0 + (r < rows ? r : 0)) * g->q_strides[2];
        outs[r] = r < rows ? out + q_base + (t0 + r) * g->q_strides[2] : spare;
      }
      const int64_t limit = visible_keys(g, t0 + rows - 1), width = ROUND_UP(limit);
      rows_by_columns(query, columns, stride, D, width, probabilities);
      for (int64_t r = 0; r < ROWS; r++) {
        float *row = probabilities + r * stride;
        float max = r < rows ? scaled_scores(g, b, t0 + r, visible_keys(g, t0 + r), width, row) : -INFINITY;
        if (max == -INFINITY) {
          memset(row, 0, (size_t)width * sizeof(float));
          if (r < rows) log_sum_exp[w * T + t0 + r] = INFINITY;
          continue;
        }
        vf total = {0};
        for (int64_t s = 0; s < width; s += LANES) {
          vf e = exp_v(load(row + s) - max);
          store(row + s, e);
          total += e;
        }
        const float sum = lane_sum(total);
        for (int64_t s = 0; s < width; s += LANES) store(row + s, load(row + s) / sum);
        log_sum_exp[w * T + t0 + r] = max + logf(sum);
      }
      weighted_rows(limit, probabilities, stride, 1, values, g->kv_strides[2], D, outs, 0);
    }
  }
  free(scratch);
  return 0;
}

/*
 * Backward items w = b·Hkv + group: for each of the group's query rows, P = e^(scale·q·kᵀ − lse) (masked 0),
 * dP = dO·vᵀ, dS = P ⊙ (dP − Σ dP ⊙ P)·scale and dQ = dS·k; P and dS of all the group's rows are kept in
 * scratch, then dV = Pᵀ·dO and dK = dSᵀ·q, key block by key block (each block skips the queries that
 * cannot see it).
 */
AK_TARGET int attention_backward(const attention_geometry *g, const float *q, const float *k, const float *v,
                                 const float *grad_out, const float *log_sum_exp, float *grad_q, float *grad_k,
                                 float *grad_v, int64_t begin, int64_t end) {
  const int64_t D = g->D, T = g->T, S = g->S, rep = g->Hq / g->Hkv, stride = ROUND_UP(S);
  const int64_t group_rows = rep * T + ROWS; /* room for the last block's unused rows */
  size_t floats = 2 * (size_t)D * (size_t)stride + (2 * (size_t)group_rows + ROWS) * (size_t)stride + (size_t)D;
  float *scratch = malloc(floats * sizeof(float) + 64);
  if (!scratch) return -1;
  float *key_columns = scratch, *value_columns = key_columns + D * stride;
  float *all_probabilities = value_columns + D * stride, *all_grad_scores = all_probabilities + group_rows * stride;
  float *grad_probabilities = all_grad_scores + group_rows * stride, *spare = grad_probabilities + ROWS * stride;
  const int64_t *qs = g->q_strides, *ks = g->kv_strides;
  for (int64_t w = begin; w < end; w++) {
    const int64_t b = w / g->Hkv, group = w % g->Hkv;
    const int64_t kv_base = b * ks[0] + group * ks[1];
    transpose_keys(k + kv_base, ks[2], S, D, stride, key_columns);
    transpose_keys(v + kv_base, ks[2], S, D, stride, value_columns);
    for (int64_t r = 0; r < rep; r++) {
      const int64_t h = group * rep + r, q_base = b * qs[0] + h * qs[1];
      for (int64_t t0 = 0; t0 < T; t0 += ROWS) {
        const int64_t rows = T - t0 < ROWS ? T - t0 : ROWS;
        const float *query[ROWS], *grad_rows[ROWS];
        float *grad_query[ROWS];
        for (int j = 0; j < ROWS; j++) {
          const int64_t t = t0 + (j < rows ? j : 0);
          query[j] = q + q_base + t * qs[2];
          grad_rows[j] = grad_out + q_base + t * qs[2];
          grad_query[j] = j < rows ? grad_q + q_base + (t0 + j) * qs[2] : spare;
        }
        const int64_t limit = visible_keys(g, t0 + rows - 1), width = ROUND_UP(limit);
        float *probabilities = all_probabilities + (r * T + t0) * stride;
        float *grad_scores = all_grad_scores + (r * T + t0) * stride;
        rows_by_columns(query, key_columns, stride, D, width, probabilities);
        rows_by_columns(grad_rows, value_columns, stride, D, width, grad_probabilities);
        for (int64_t j = 0; j < ROWS; j++) {
          float *p = probabilities + j * stride, *dp = grad_probabilities + j * stride, *ds = grad_scores + j * stride;
          if (j < rows) {
            const float lse = log_sum_exp[(b * g->Hq + h) * T + t0 + j];
            const float total = recomputed_probabilities(g, b, t0 + j, visible_keys(g, t0 + j), width, lse, p, dp);
            for (int64_t s = 0; s < width; s += LANES)
              store(ds + s, load(p + s) * (load(dp + s) - total) * g->scale);
          } else {
            memset(p, 0, (size_t)width * sizeof(float));
            memset(ds, 0, (size_t)width * sizeof(float));
          }
          /* Key blocks past this row's tile read its entries up to `stride`: they are zero. */
          memset(p + width, 0, (size_t)(stride - width) * sizeof(float));
          memset(ds + width, 0, (size_t)(stride - width) * sizeof(float));
        }
        weighted_rows(limit, grad_scores, stride, 1, k + kv_base, ks[2], D, grad_query, 0);
      }
    }
    for (int64_t s0 = 0; s0 < S; s0 += ROWS) {
      float *value_rows[ROWS], *key_rows[ROWS];
      for (int j = 0; j < ROWS; j++) {
        value_rows[j] = s0 + j < S ? grad_v + kv_base + (s0 + j) * ks[2] : spare;
        key_rows[j] = s0 + j < S ? grad_k + kv_base + (s0 + j) * ks[2] : spare;
      }
      /* Queries t < s0 − offset see none of keys s0.. (causal), so each head's sum starts past them. */
      int64_t first = g->causal ? s0 - g->offset : 0;
      first = first < 0 ? 0 : first > T ? T : first;
      for (int64_t r = 0; r < rep; r++) {
        const int64_t q_base = b * qs[0] + (group * rep + r) * qs[1] + first * qs[2];
        const int64_t coefficient = (r * T + first) * stride + s0;
        weighted_rows(T - first, all_probabilities + coefficient, 1, stride, grad_out + q_base, qs[2], D, value_rows,
                      r > 0);
        weighted_rows(T - first, all_grad_scores + coefficient, 1, stride, q + q_base, qs[2], D, key_rows, r > 0);
      }
    }
  }
  free(scratch);
  return 0;
}

/*
 * Rotate-half RoPE of rows [begin, end) of x [rows, H, D] with angles cos/sin[(r % period)·D/2 + i]:
 * out = (a·c − b·s', b·c + a·s') with s' = direction·s, in double and rounded once, as fused.ts's rotate
 * (each product of two floats is exact in double, so a fused multiply-add rounds the same).
 */
AK_TARGET void rope_rows(const float *x, const float *cos, const float *sin, int64_t period, int64_t H, int64_t D,
                         int direction, float *out, int64_t begin, int64_t end) {
  const int64_t half = D / 2;
  for (int64_t row = begin; row < end; row++) {
    const float *c = cos + (row % period) * half, *s = sin + (row % period) * half;
    for (int64_t h = 0; h < H; h++) {
      const float *first = x + (row * H + h) * D, *second = first + half;
      float *out_first = out + (row * H + h) * D, *out_second = out_first + half;
      for (int64_t i = 0; i < half; i++) {
        const double angle_sin = (double)(s[i] * (float)direction);
        out_first[i] = (float)((double)first[i] * c[i] - (double)second[i] * angle_sin);
        out_second[i] = (float)((double)second[i] * c[i] + (double)first[i] * angle_sin);
      }
    }
  }
}

static const attention_kernel_set AK(attention_kernels) = {AK_NAME, attention_forward, attention_backward, rope_rows};

#undef LANES
#undef COLUMNS
#undef ROWS
#undef vf
#undef vi
#undef splat
#undef splat_from
#undef pick
#undef load
#undef store
#undef load_part
#undef store_part
#undef exp_v
#undef lane_sum
#undef rows_by_columns
#undef weighted_rows
#undef transpose_keys
#undef key_hidden
#undef scaled_scores
#undef recomputed_probabilities
#undef visible_keys
#undef attention_forward
#undef attention_backward
#undef rope_rows
#undef ROUND_UP
