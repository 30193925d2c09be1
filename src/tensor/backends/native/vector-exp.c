/*
 * The float32 e^x on GCC vectors shared by the row kernels (row-kernels-body.c) and training attention
 * (attention-body.c): included by each after it defines vf, vi, splat, pick, INLINE and `exp_v` (its per-set
 * name). Is not: a translation unit of its own (binding.gyp does not list it) or the double exp of SwiGLU.
 */
/*
 * e^x: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two parts so n·ln2 is exact), e^r from Cephes'
 * expf polynomial, and 2^n applied as two factors so results down to the subnormals come out right.
 */
INLINE vf exp_v(vf x) {
  /* NaN needs no mask (a lane-wise x != x is slow in GCC's vector lowering): it flows through as NaN. */
  vi tiny = x < -104.0f; /* e^x below half the smallest subnormal */
  vf xc = pick(x > 89.0f, splat(89.0f), pick(tiny, splat(-104.0f), x)); /* 89 still overflows to Inf */
  vf fx = xc * 1.44269504088896341f + 0.5f;
  vi n = __builtin_convertvector(fx, vi);
  vf nf = __builtin_convertvector(n, vf);
  n += (vi)(nf > fx); /* truncation → floor: −1 where it rounded up */
  nf = __builtin_convertvector(n, vf);
  vf r = xc - nf * 0.693359375f;
  r = r + nf * 2.12194440e-4f;
  vf y = splat(1.9875691500e-4f);
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  vi half = n >> 1;
  vf scale1 = (vf)((half + 127) << 23);
  vf scale2 = (vf)((n - half + 127) << 23);
  vf result = y * scale1 * scale2;
  return pick(tiny, splat(0.0f), result);
}
