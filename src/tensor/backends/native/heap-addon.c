/*
 * retainFreedMemory(): glibc's malloc set to serve blocks up to 1 GiB from its heap instead of one mmap
 * each, and to keep freed memory instead of handing it back to the kernel (M_TRIM_THRESHOLD -1). A training
 * step allocates and frees gigabytes of activation and gradient arrays of the same few sizes: by default
 * every block above the mmap threshold (at most 32 MiB) is mapped fresh and each of its pages faults and is
 * cleared by the kernel on first touch, and the heap's free top is trimmed and faulted back in every step.
 * On the 25M model's 64x128 step that was 3.4-4.7 s of system time in a ~32 s CPU step (0.04-0.2 s after),
 * for a peak resident size within a few percent. Returns whether the settings took (false off glibc).
 *
 * Is: included by addon.c after its helpers (CHECK). Is not: an allocator; process-wide, so the caller
 * (native-backend.ts) applies it once and lets the environment opt out.
 */
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value retain_freed_memory_binding(napi_env env, napi_callback_info info) {
  (void)info;
  bool applied = false;
#if defined(__GLIBC__)
  applied = mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1;
#endif
  napi_value result;
  CHECK(napi_get_boolean(env, applied, &result));
  return result;
}
