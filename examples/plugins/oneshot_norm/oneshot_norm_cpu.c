/* oneshot_norm for the cpu backend: an example colltest kernel plugin (docs/plugins.md), a
 * one-shot all-reduce + residual add + RMSNorm written against <colltest/kernel_plugin.h> alone.
 *
 * Protocol. A rank's workspace is a 64-byte flag line, then two data buffers (the call's parity
 * picks one). Call e: copy this rank's input into its own buffer[e % 2], release-store e into its
 * own flag, wait until every peer's flag is >= e, then reduce every rank's buffer[e % 2] in rank
 * order. Two buffers suffice: a rank starts call e + 2 only after seeing every peer at e + 1,
 * that is, done reading the buffers of call e.
 *
 * Build against an installed colltest (README.md beside this file):
 *   cmake -S . -B b -DCMAKE_PREFIX_PATH=<prefix> && cmake --build b   # b/oneshot_norm_cpu.so
 */
#define _POSIX_C_SOURCE 200809L
#include <colltest/kernel_plugin.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLAG_BYTES 64u /* the flag on a cache line of its own */
#define MAX_WORLD 8

typedef struct {
  uint32_t world, rank;
  uint64_t buffer_bytes;        /* the size of each of the two data buffers */
  unsigned char* ws[MAX_WORLD]; /* every rank's workspace, as this rank addresses it */
  uint64_t calls;               /* launches so far: the next call's epoch is calls + 1 */
} oneshot_state;

/* ---- Element conversions: little-endian storage, round to nearest even. ---- */
static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static uint16_t to_fp16(float f) {
  const uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a >= 0x47800000u) return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a < 0x38800000u) /* subnormal: adding 0.5 makes the FPU round to a multiple of 2^-24 */
    return (uint16_t)(sign | (float_bits(bits_float(a) + 0.5f) - 0x3f000000u));
  return (uint16_t)(sign | ((a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13)); /* may carry to Inf */
}
static float from_fp16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (m << 13));
  if (exp == 0) return bits_float(sign | float_bits((float)m * 0x1p-24f));
  return bits_float(sign | ((exp + 112u) << 23) | (m << 13));
}
static size_t elem_bytes(uint32_t dtype) {
  return dtype == COLLTEST_DTYPE_FP32                                     ? 4
         : (dtype == COLLTEST_DTYPE_BF16 || dtype == COLLTEST_DTYPE_FP16) ? 2
                                                                          : 0;
}
static float load(const void* p, size_t i, uint32_t dtype) {
  if (dtype == COLLTEST_DTYPE_FP32) return ((const float*)p)[i];
  if (dtype == COLLTEST_DTYPE_BF16) return bits_float((uint32_t)((const uint16_t*)p)[i] << 16);
  return from_fp16(((const uint16_t*)p)[i]);
}
static void store(void* p, size_t i, uint32_t dtype, float v) {
  if (dtype == COLLTEST_DTYPE_FP32)
    ((float*)p)[i] = v;
  else
    ((uint16_t*)p)[i] = dtype == COLLTEST_DTYPE_BF16 ? to_bf16(v) : to_fp16(v);
}
static float round_to(uint32_t dtype, float v) {
  if (dtype == COLLTEST_DTYPE_FP32) return v;
  if (dtype == COLLTEST_DTYPE_BF16) return bits_float((uint32_t)to_bf16(v) << 16);
  return from_fp16(to_fp16(v));
}

/* ---- The entry points. ---- */
static colltest_status_t oneshot_workspace_bytes(const colltest_shape_v1_t* shape, uint64_t* bytes,
                                                 char* err, size_t err_len) {
  const size_t elem = elem_bytes(shape->dtype);
  if (elem == 0) {
    snprintf(err, err_len, "oneshot_norm: dtype %u is not bf16, fp16 or fp32", shape->dtype);
    return COLLTEST_ERROR;
  }
  *bytes = FLAG_BYTES + 2 * (uint64_t)shape->m * shape->n * elem;
  return COLLTEST_OK;
}

static colltest_status_t oneshot_init(const colltest_group_v1_t* group, void** state, char* err,
                                      size_t err_len) {
  oneshot_state* s;
  uint32_t r;
  if (group->largest.world > MAX_WORLD || group->largest.rank >= group->largest.world ||
      group->workspace_bytes < FLAG_BYTES) {
    snprintf(err, err_len, "oneshot_norm: bad group (world %u, rank %u, workspace %llu bytes)",
             group->largest.world, group->largest.rank, (unsigned long long)group->workspace_bytes);
    return COLLTEST_ERROR;
  }
  s = (oneshot_state*)calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(err, err_len, "oneshot_norm: out of memory");
    return COLLTEST_ERROR;
  }
  s->world = group->largest.world;
  s->rank = group->largest.rank;
  s->buffer_bytes = (group->workspace_bytes - FLAG_BYTES) / 2 / 16 * 16; /* aligned halves */
  for (r = 0; r < s->world; ++r) s->ws[r] = (unsigned char*)group->peer_workspace[r];
  *state = s;
  return COLLTEST_OK;
}

static _Atomic uint64_t* flag_of(const oneshot_state* s, uint32_t r) {
  return (_Atomic uint64_t*)(void*)s->ws[r];
}
static unsigned char* buffer_of(const oneshot_state* s, uint32_t r, uint64_t epoch) {
  return s->ws[r] + FLAG_BYTES + (epoch % 2) * s->buffer_bytes;
}

static colltest_status_t oneshot_launch(void* state, const colltest_launch_v1_t* call, char* err,
                                        size_t err_len) {
  oneshot_state* s = (oneshot_state*)state;
  const size_t elem = elem_bytes(call->dtype), n = call->n;
  const uint64_t bytes = (uint64_t)call->m * n * elem;
  uint64_t epoch;
  uint32_t r, row;
  if (elem == 0 || call->epilogue != COLLTEST_EPILOGUE_NONE || call->out == NULL) {
    snprintf(err, err_len, "oneshot_norm: only bf16/fp16/fp32 with epilogue none");
    return COLLTEST_UNSUPPORTED;
  }
  if (bytes > s->buffer_bytes) {
    snprintf(err, err_len,
             "oneshot_norm: m=%u n=%u needs %llu bytes a buffer, the workspace has %llu", call->m,
             call->n, (unsigned long long)bytes, (unsigned long long)s->buffer_bytes);
    return COLLTEST_UNSUPPORTED;
  }
  epoch = ++s->calls;

  /* Publish this rank's input, then wait for every peer's. */
  memcpy(buffer_of(s, s->rank, epoch), call->input, bytes);
  atomic_store_explicit(flag_of(s, s->rank), epoch, memory_order_release);
  for (r = 0; r < s->world; ++r) {
    unsigned spins = 0;
    while (atomic_load_explicit(flag_of(s, r), memory_order_acquire) < epoch) {
      /* Yield first, then sleep: 8 ranks may share 2 cores. */
      struct timespec pause = {0, 20000};
      if (++spins < 64)
        sched_yield();
      else
        nanosleep(&pause, NULL);
    }
  }

  for (row = 0; row < call->m; ++row) {
    const size_t base = (size_t)row * n;
    double sum_sq = 0, inv_rms;
    size_t c;
    for (c = 0; c < n; ++c) {
      /* Start from rank 0's value, not 0: -0.0 on every rank sums to -0.0. */
      float acc = load(buffer_of(s, 0, epoch), base + c, call->dtype);
      for (r = 1; r < s->world; ++r) acc += load(buffer_of(s, r, epoch), base + c, call->dtype);
      acc = round_to(call->dtype, acc);
      if (call->residual_in != NULL)
        acc = round_to(call->dtype, acc + load(call->residual_in, base + c, call->dtype));
      store(call->residual_out, base + c, call->dtype, acc);
      sum_sq += (double)acc * acc;
    }
    inv_rms = 1.0 / sqrt(sum_sq / (double)n + (double)call->eps);
    for (c = 0; c < n; ++c) {
      const double v = load(call->residual_out, base + c, call->dtype) * inv_rms *
                       load(call->weight, c, call->dtype);
      store(call->out, base + c, call->dtype, (float)v);
    }
  }
  return COLLTEST_OK;
}

static colltest_status_t oneshot_fini(void* state, char* err, size_t err_len) {
  (void)err;
  (void)err_len;
  free(state);
  return COLLTEST_OK;
}

const colltest_kernel_v1_t colltest_kernel_v1 = {
    COLLTEST_KERNEL_ABI_VERSION,
    sizeof(colltest_kernel_v1_t),
    "oneshot_norm",
    "1.0",
    COLLTEST_BACKEND_CPU,
    (1u << COLLTEST_DTYPE_BF16) | (1u << COLLTEST_DTYPE_FP16) | (1u << COLLTEST_DTYPE_FP32),
    (1u << 2) | (1u << 4) | (1u << 8),
    1u << COLLTEST_EPILOGUE_NONE,
    /* The cpu backend records a captured batch and replays it in order, so the host-side call
     * counter is fine; a GPU plugin keeps it in device memory (oneshot_norm.cu). */
    COLLTEST_KERNEL_GRAPH_CAPTURE,
    0,
    1u << 24,
    oneshot_workspace_bytes,
    oneshot_init,
    NULL, /* arm: the flags only grow, nothing to reset */
    oneshot_launch,
    oneshot_fini,
};
