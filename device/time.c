/* time.h's clocks for target regions, as LLVM libc's GPU build has them (its libc/src/time/gpu): the
 * device's fixed-frequency clock, read on the device, with no host call.
 *
 *   * clock_gettime(CLOCK_MONOTONIC, ts): the time of that clock, from an epoch of its own (the
 *     device's start); any other clock id, or a null ts, fails (-1, errno EINVAL), as there is no
 *     wall clock on the device.
 *   * clock(): the same clock in CLOCKS_PER_SEC (10^6) units, not the processor time a host's clock()
 *     counts: differences of two calls divided by CLOCKS_PER_SEC are seconds elapsed.
 *   * nanosleep(req, rem): waits until at least the time asked has passed on that clock, napping
 *     between looks (NVIDIA's nanosleep instruction, AMD's s_sleep), and returns 0; a null req, or a
 *     tv_nsec outside 0 to 999999999 or a negative tv_sec, fails with EINVAL (POSIX's rule; LLVM libc
 *     checks only the null). It is never interrupted, so rem is left alone.
 *
 * The clocks: NVIDIA's %globaltimer (nanoseconds); AMD's realtime counter (s_memrealtime, or on gfx11
 * the GET_REALTIME message), at the frequency in __llvm_libc_clock_freq, LLVM libc's variable of the
 * same name and meaning, with LLVM libc's defaults unless whoever loads the image writes the agent's
 * own: 25 MHz on GFX9 parts before gfx940 (MI50, MI100, MI200), 100 MHz on gfx940 and later and on
 * RDNA. The library's host builds (the host device's tests) read the host's CLOCK_MONOTONIC
 * and nap with the host's nanosleep, through the same code. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED

#if !defined(__NVPTX__) && !defined(__AMDGCN__)
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

int *OMPRPC_LIBC_(__errno_location)(void);

/* The C library's struct timespec and clock id, as glibc's headers lay them out for the program. */
typedef struct {
  int64_t tv_sec;
  int64_t tv_nsec;
} omprpc_timespec_;
#define OMPRPC_CLOCK_MONOTONIC_ 1
#define OMPRPC_CLOCKS_PER_SEC_ 1000000

#if defined(__AMDGCN__)
#if defined(__GFX9__) && !defined(__gfx940__) && !defined(__gfx941__) && !defined(__gfx942__)
#define OMPRPC_REALTIME_HZ_ 25000000
#else
#define OMPRPC_REALTIME_HZ_ 100000000
#endif
/* The realtime counter's frequency (see above); protected, so that the image's loader can find it. */
__attribute__((weak, visibility("protected"))) uint64_t __llvm_libc_clock_freq = OMPRPC_REALTIME_HZ_;
#endif

/* The device's fixed-frequency clock, in nanoseconds. */
static uint64_t omprpc_clock_ns_(void) {
#if defined(__NVPTX__)
  uint64_t ns;
  __asm__ volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
#elif defined(__AMDGCN__)
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__)
  uint64_t ticks = __builtin_amdgcn_s_sendmsg_rtnl(0x83); /* MSG_RTN_GET_REALTIME */
#else
  uint64_t ticks = __builtin_amdgcn_s_memrealtime();
#endif
  uint64_t frequency = __atomic_load_n(&__llvm_libc_clock_freq, __ATOMIC_RELAXED);
  if (!frequency)
    frequency = OMPRPC_REALTIME_HZ_;
  /* ticks * 10^9 / frequency without overflow: whole seconds first, then the rest. */
  return ticks / frequency * 1000000000u + ticks % frequency * 1000000000u / frequency;
#else
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}

/* Naps for about `ns` nanoseconds or less: the caller looks at the clock again. */
static void omprpc_nap_ns_(uint64_t ns) {
#if defined(__NVPTX__)
  uint32_t nap = ns < 1000000 ? (uint32_t)ns : 1000000; /* the instruction's longest is 1 ms */
  __asm__ volatile("nanosleep.u32 %0;" ::"r"(nap));
#elif defined(__AMDGCN__)
  (void)ns;
  __builtin_amdgcn_s_sleep(15); /* about 960 cycles */
#else
  struct timespec nap = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&nap, 0);
#endif
}

int OMPRPC_LIBC_(clock_gettime)(int clock, omprpc_timespec_ *ts) {
  if (clock != OMPRPC_CLOCK_MONOTONIC_ || !ts) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_EINVAL;
    return -1;
  }
  uint64_t ns = omprpc_clock_ns_();
  ts->tv_sec = (int64_t)(ns / 1000000000u);
  ts->tv_nsec = (int64_t)(ns % 1000000000u);
  return 0;
}

long OMPRPC_LIBC_(clock)(void) { return (long)(omprpc_clock_ns_() / (1000000000u / OMPRPC_CLOCKS_PER_SEC_)); }

int OMPRPC_LIBC_(nanosleep)(const omprpc_timespec_ *req, omprpc_timespec_ *rem) {
  (void)rem;
  if (!req || req->tv_sec < 0 || req->tv_nsec < 0 || req->tv_nsec > 999999999) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_EINVAL;
    return -1;
  }
  uint64_t wanted = (uint64_t)req->tv_sec >= UINT64_MAX / 1000000000u
                        ? UINT64_MAX
                        : (uint64_t)req->tv_sec * 1000000000u + (uint64_t)req->tv_nsec;
  uint64_t start = omprpc_clock_ns_();
  for (uint64_t passed = 0; passed < wanted; passed = omprpc_clock_ns_() - start)
    omprpc_nap_ns_(wanted - passed);
  return 0;
}

#pragma omp end declare target
#ifdef __cplusplus
}
#endif

#endif
