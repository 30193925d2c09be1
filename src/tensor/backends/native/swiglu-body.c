/*
 * SwiGLU's arithmetic for one vector width, included by swiglu.c once per instruction set with SW_BYTES
 * (vector bytes: 64 AVX-512, 32 AVX2, 16 SSE2/NEON), SW(name) (a per-set name suffix) and SW_TARGET (the
 * function target attribute) defined.
 *
 * Is: silu(gate)·up and its gradients in float32 with the float exp of vector-exp.c (≤ 2 ulp), the
 * formulas of fused.ts's loops step for step (σ = 1/(1 + e^−x) for x ≥ 0, e^x/(1 + e^x) below) but every
 * step rounded to float32 where the loops work in double: see swiglu.c for the tolerance this gives. No
 * fused multiply-adds (swiglu.c turns contraction off), so each element's result depends only on its
 * inputs: every set gives the same bits, and the backward's recomputed output equals the forward's.
 * Is not: threading or argument checks (swiglu.c, swiglu-addon.c).
 */
#define vf SW(vf)
#define vi SW(vi)
#define splat SW(splat)
#define pick SW(pick)
#define load_part SW(load_part)
#define store_part SW(store_part)
#define exp_v SW(exp_v)
#define sigmoid_v SW(sigmoid_v)
#define swiglu_forward SW(swiglu_forward)
#define swiglu_backward SW(swiglu_backward)

#define SW_LANES (SW_BYTES / 4)

typedef float vf __attribute__((vector_size(SW_BYTES)));
typedef int32_t vi __attribute__((vector_size(SW_BYTES)));

INLINE vf splat(float value) { return (vf){0} + value; }
INLINE vf pick(vi mask, vf yes, vf no) { return (vf)(((vi)yes & mask) | ((vi)no & ~mask)); }
/* The first `count` lanes of p (all of them when count ≥ SW_LANES), zeros after. */
INLINE vf load_part(const float *p, int64_t count) {
  vf v = {0};
  if (count >= SW_LANES) {
    memcpy(&v, p, sizeof v);
    return v;
  }
  float lanes[SW_LANES] = {0};
  for (int64_t i = 0; i < count; i++) lanes[i] = p[i];
  memcpy(&v, lanes, sizeof v);
  return v;
}
INLINE void store_part(float *p, vf v, int64_t count) {
  if (count >= SW_LANES) {
    memcpy(p, &v, sizeof v);
    return;
  }
  float lanes[SW_LANES];
  memcpy(lanes, &v, sizeof lanes);
  for (int64_t i = 0; i < count; i++) p[i] = lanes[i];
}

#include "vector-exp.c"

/* fused.ts's sigmoidOf in float32: e^x never overflows (its argument is −|x|); NaN stays NaN. */
INLINE vf sigmoid_v(vf x) {
  vi positive = x >= 0.0f;
  vf e = exp_v(pick(positive, -x, x));
  return pick(positive, splat(1.0f), e) / (1.0f + e);
}

SW_TARGET void swiglu_forward(const float *gate, const float *up, float *out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += SW_LANES) {
    int64_t count = end - i;
    vf x = load_part(gate + i, count);
    store_part(out + i, x * sigmoid_v(x) * load_part(up + i, count), count);
  }
}

SW_TARGET void swiglu_backward(const float *gate, const float *up, const float *g, float *grad_gate, float *grad_up,
                               float *out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += SW_LANES) {
    int64_t count = end - i;
    vf x = load_part(gate + i, count), u = load_part(up + i, count), gi = load_part(g + i, count);
    vf s = sigmoid_v(x);
    vf silu = x * s;
    store_part(grad_gate + i, gi * u * (s * (1.0f + x * (1.0f - s))), count);
    store_part(grad_up + i, gi * silu, count);
    if (out) store_part(out + i, silu * u, count);
  }
}

#undef vf
#undef vi
#undef splat
#undef pick
#undef load_part
#undef store_part
#undef exp_v
#undef sigmoid_v
#undef swiglu_forward
#undef swiglu_backward
#undef SW_LANES
