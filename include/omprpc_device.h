/* omprpc_device.h: host services for OpenMP target regions, through the RPC protocol of LLVM libc 19.1.
 *
 * Include it in the program's sources and call the omprpc_* functions below from target regions, on
 * any device omprpc serves: the host device (x86_64), NVIDIA GPUs (nvptx64, sm_70 and later) and AMD
 * GPUs (amdgcn, wavefronts of 64 or 32). Each call is carried to the host over the shared-memory
 * mailbox that the omprpc plugin sets up when it loads an image defining __llvm_libc_rpc_client (this
 * header defines it), and served there by LLVM libc's RPC server: output goes to the host's
 * stdout/stderr and files, malloc returns device memory, exit ends the host process, and opcodes from
 * 0x8000 reach handlers the host program registered with omprpc_register_handler (include/omprpc.h).
 *
 * On a GPU the threads of a warp (wavefront) that make a call together share one port: the lowest
 * active lane locks and flips it, and each lane sends and receives its own packet, so a warp's 32 (or
 * 64) printf lines cost one exchange. Calls must be made by converged lanes (as any warp-wide
 * operation must).
 *
 * printf takes its arguments through macros (C) or templates (C++) that record each argument's type,
 * not through va_list, which clang-16 cannot compile for GPUs; the host formats the line. Conversions
 * are C99's without positional arguments; GPU code cannot pass long double. omprpc_vfprintf (va_list)
 * exists for code that only runs on the host device. omprpc_snprintf, omprpc_sprintf and
 * omprpc_asprintf take their arguments the same way; the host formats them with its C library and
 * sends back the bytes for the buffer. omprpc_sscanf, omprpc_fscanf and omprpc_scanf take pointers
 * the same way; the host parses with its C library and sends back what it stored through each.
 *
 * Where no omprpc server is attached (the stock plugin, or host fallback), calls compiled for the host
 * are carried out directly, so that programs still work; on a GPU they fail (EOF, -1, NULL), and
 * omprpc_rpc_active() tells which.
 *
 * Streams: OMPRPC_STDIN, OMPRPC_STDOUT, OMPRPC_STDERR, or what omprpc_fopen returned. */
#ifndef OMPRPC_DEVICE_H
#define OMPRPC_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "omprpc.h" /* omprpc_packet, shared with host-side handlers */

#if defined(__NVPTX__) || defined(__AMDGCN__)
#define OMPRPC_GPU_ 1
#else
#define OMPRPC_GPU_ 0
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#pragma omp begin declare target

/* ---- Lanes ----------------------------------------------------------------------------------------
 * OMPRPC_LANES threads share a port: a warp, a wavefront, or one thread on the host. The server of a
 * device is made with the same lane count. OMPRPC_SIMULATED_LANES (host builds, tests only) plays a
 * warp with the threads of an OpenMP parallel region, for a host device whose server has that many
 * lanes (OMPRPC_HOST_RPC_LANES).
 *
 * Every operation among lanes names its lanes (`mask`), and lanes outside it may be doing something
 * else at the same time: lanes of one warp that make different calls at once (another opcode) are
 * split into groups (omprpc_match_), each group on a port of its own, and the groups run side by side
 * (in lockstep on AMD, where the broadcast therefore reads the group leader's lane, not the wave's
 * first; interleaved on NVIDIA, where every *_sync intrinsic takes the group's mask). */

#if defined(__NVPTX__)
#define OMPRPC_LANES 32
static inline uint64_t omprpc_lane_mask_(void) {
  uint32_t mask;
  __asm__ volatile("activemask.b32 %0;" : "=r"(mask));
  return mask;
}
static inline uint32_t omprpc_lane_id_(void) { return (uint32_t)__nvvm_read_ptx_sreg_laneid(); }
static inline uint64_t omprpc_ballot_(uint64_t mask, int x) {
  return (uint32_t)__nvvm_vote_ballot_sync((uint32_t)mask, x != 0);
}
/* The value `x` of the lowest lane of `mask`, in every lane of `mask`. */
static inline uint32_t omprpc_broadcast_(uint64_t mask, uint32_t x) {
  return (uint32_t)__nvvm_shfl_sync_idx_i32((uint32_t)mask, (int)x, __builtin_ctz((uint32_t)mask), 31);
}
/* The lanes of `mask` whose `x` equals this lane's. */
static inline uint64_t omprpc_match_(uint64_t mask, uint32_t x) {
  return (uint32_t)__nvvm_match_any_sync_i32((uint32_t)mask, (int)x);
}
static inline void omprpc_sync_lanes_(uint64_t mask) { __nvvm_bar_warp_sync((uint32_t)mask); }
static inline uint32_t omprpc_start_port_(void) {
  return (uint32_t)(__nvvm_read_ptx_sreg_ctaid_x() * 32 + __nvvm_read_ptx_sreg_tid_x() / 32);
}
static inline void omprpc_nap_(uint32_t naps) {
  (void)naps;
  __asm__ volatile("nanosleep.u32 64;");
}
#elif defined(__AMDGCN__)
#define OMPRPC_LANES __AMDGCN_WAVEFRONT_SIZE
static inline uint64_t omprpc_lane_mask_(void) { return __builtin_amdgcn_read_exec(); }
static inline uint32_t omprpc_lane_id_(void) {
#if __AMDGCN_WAVEFRONT_SIZE == 64
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
#else
  return __builtin_amdgcn_mbcnt_lo(~0u, 0u);
#endif
}
static inline uint64_t omprpc_ballot_(uint64_t mask, int x) {
#if __AMDGCN_WAVEFRONT_SIZE == 64
  return __builtin_amdgcn_ballot_w64(x != 0) & mask;
#else
  return (uint64_t)__builtin_amdgcn_ballot_w32(x != 0) & mask;
#endif
}
/* Groups of one wave run in lockstep, so readfirstlane (the wave's first active lane) would give every
 * group the first group's value: each lane reads its own group's leader. */
static inline uint32_t omprpc_broadcast_(uint64_t mask, uint32_t x) {
  return (uint32_t)__builtin_amdgcn_ds_bpermute((int)(__builtin_ctzll(mask) * 4), (int)x);
}
static inline uint64_t omprpc_match_(uint64_t mask, uint32_t x) {
  uint64_t left = mask, mine = 0;
  while (left) {
    uint32_t value = (uint32_t)__builtin_amdgcn_readlane((int)x, (int)__builtin_ctzll(left));
    uint64_t same = omprpc_ballot_(left, x == value);
    if (x == value)
      mine = same;
    left &= ~same;
  }
  return mine;
}
static inline void omprpc_sync_lanes_(uint64_t mask) {
  (void)mask;
  __builtin_amdgcn_wave_barrier();
}
static inline uint32_t omprpc_start_port_(void) {
  return __builtin_amdgcn_workgroup_id_x() * 16 + __builtin_amdgcn_workitem_id_x() / OMPRPC_LANES;
}
static inline void omprpc_nap_(uint32_t naps) {
  (void)naps;
  __builtin_amdgcn_s_sleep(2);
}
#elif defined(OMPRPC_SIMULATED_LANES)
#include <omp.h>
#define OMPRPC_LANES OMPRPC_SIMULATED_LANES
/* Per lane, the lanes taking part in its next call, as a branch would leave them on a GPU; 0 means
 * the whole team. A test sets its lane's entry in the lanes of a branch to play a partial mask. */
__attribute__((weak)) uint64_t omprpc_simulated_active_[64];
static inline uint32_t omprpc_lane_id_(void) { return (uint32_t)omp_get_thread_num(); }
static inline uint64_t omprpc_lane_mask_(void) {
  int n = omp_get_num_threads();
  uint64_t team = n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
  uint64_t active = omprpc_simulated_active_[omprpc_lane_id_()];
  return active ? active & team : team;
}
/* A barrier among the lanes of a mask, while groups of other lanes wait at barriers of their own: one
 * slot per mask waited on (at most one per lane), found under a lock. */
typedef struct {
  uint64_t mask;
  uint32_t arrived;
  uint32_t generation;
} omprpc_simulated_barrier_;
__attribute__((weak)) omprpc_simulated_barrier_ omprpc_simulated_barriers_[64];
__attribute__((weak)) int omprpc_simulated_lock_;
__attribute__((weak)) uint64_t omprpc_simulated_words_[64];
static inline void omprpc_sync_lanes_(uint64_t mask) {
  while (__atomic_exchange_n(&omprpc_simulated_lock_, 1, __ATOMIC_ACQUIRE))
    sched_yield();
  omprpc_simulated_barrier_ *slot = 0, *free_slot = 0;
  for (int i = 0; i < 64 && !slot; ++i) {
    omprpc_simulated_barrier_ *b = &omprpc_simulated_barriers_[i];
    if (b->arrived && b->mask == mask)
      slot = b;
    else if (!b->arrived && !free_slot)
      free_slot = b;
  }
  if (!slot)
    slot = free_slot, slot->mask = mask;
  uint32_t generation = __atomic_load_n(&slot->generation, __ATOMIC_RELAXED);
  int last = ++slot->arrived == (uint32_t)__builtin_popcountll(mask);
  if (last) {
    slot->arrived = 0;
    __atomic_store_n(&slot->generation, generation + 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&omprpc_simulated_lock_, 0, __ATOMIC_RELEASE);
  while (!last && __atomic_load_n(&slot->generation, __ATOMIC_ACQUIRE) == generation)
    sched_yield();
}
/* Each lane of `mask` publishes `x`; returns what the lanes of `mask` published, in `words`. Every
 * exchange ends with a barrier, so the words are free again when the next one starts. */
static inline void omprpc_simulated_exchange_(uint64_t mask, uint64_t x, uint64_t words[64]) {
  __atomic_store_n(&omprpc_simulated_words_[omprpc_lane_id_()], x, __ATOMIC_RELAXED);
  omprpc_sync_lanes_(mask);
  for (uint32_t lane = 0; lane < 64; ++lane)
    words[lane] = mask >> lane & 1 ? __atomic_load_n(&omprpc_simulated_words_[lane], __ATOMIC_RELAXED) : 0;
  omprpc_sync_lanes_(mask);
}
static inline uint64_t omprpc_ballot_(uint64_t mask, int x) {
  uint64_t words[64], bits = 0;
  omprpc_simulated_exchange_(mask, x != 0, words);
  for (uint32_t lane = 0; lane < 64; ++lane)
    bits |= (words[lane] & 1) << lane;
  return bits & mask;
}
static inline uint32_t omprpc_broadcast_(uint64_t mask, uint32_t x) {
  uint64_t words[64];
  omprpc_simulated_exchange_(mask, x, words);
  return (uint32_t)words[__builtin_ctzll(mask)];
}
static inline uint64_t omprpc_match_(uint64_t mask, uint32_t x) {
  uint64_t words[64], same = 0;
  omprpc_simulated_exchange_(mask, x, words);
  for (uint32_t lane = 0; lane < 64; ++lane)
    same |= (uint64_t)(mask >> lane & 1 && words[lane] == x) << lane;
  return same;
}
static inline uint32_t omprpc_start_port_(void) { return 0; }
#else
#define OMPRPC_LANES 1
static inline uint64_t omprpc_lane_mask_(void) { return 1; }
static inline uint32_t omprpc_lane_id_(void) { return 0; }
static inline uint64_t omprpc_ballot_(uint64_t mask, int x) { return x ? mask : 0; }
static inline uint32_t omprpc_broadcast_(uint64_t mask, uint32_t x) {
  (void)mask;
  return x;
}
static inline uint64_t omprpc_match_(uint64_t mask, uint32_t x) {
  (void)x;
  return mask;
}
static inline void omprpc_sync_lanes_(uint64_t mask) { (void)mask; }
/* Threads start from ports of their own (their stacks differ), so that they spread over the ports. */
static inline uint32_t omprpc_start_port_(void) { return (uint32_t)((uintptr_t)__builtin_frame_address(0) >> 12); }
#endif

#if !OMPRPC_GPU_
/* On the host, a thread waiting for the server (a slow handler, a busy port) yields the processor 4,096
 * times (a millisecond or more), then sleeps in naps that double up to a millisecond: it never holds a
 * core for the length of a slow call, and a reply that comes within a millisecond is seen at once.
 * Sleeping sooner costs calls made back to back: a sleeping client (at least the kernel's 50 us of
 * timer slack) leaves the serving thread idle long enough to sleep too, and each call then pays two
 * wake-ups (measured: 1.9-10 us a call instead of 0.6-0.8 at 4,096 ports). */
static inline void omprpc_nap_(uint32_t naps) {
  if (naps < 4096) {
    sched_yield();
  } else {
    uint32_t shift = (naps - 4096) / 8;
    struct timespec nap = {0, (long)(1000u << (shift < 10 ? shift : 10))};
    nanosleep(&nap, 0);
  }
}
#endif

static inline int omprpc_is_leader_(uint64_t mask) { return omprpc_lane_id_() == (uint32_t)__builtin_ctzll(mask); }

/* Waiting: spin a little, then nap (nanosleep on NVIDIA, s_sleep on AMD; on the host, yields and then
 * growing sleeps, as the serving threads share the processors). */
static inline void omprpc_pause_(uint32_t *spins) {
  if (++*spins < 64) {
#if !OMPRPC_GPU_ && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#endif
  } else {
    omprpc_nap_(*spins - 64);
  }
}

/* ---- Memory ordering ------------------------------------------------------------------------------
 * The mailbox words live in host memory and are shared with the host's server, so every access is a
 * system-scope atomic. Plain __atomic builtins carry LLVM's default (system) scope; clang-16 cannot
 * select NVPTX atomic fences, acquire loads or release stores, so NVPTX uses relaxed accesses (which
 * become ld/st.volatile, strong at system scope), membar.sys fences and the system-scope atom.sys. */

static inline uint32_t omprpc_load_(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void omprpc_store_(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
#if defined(__NVPTX__)
static inline void omprpc_fence_acquire_(void) { __nvvm_membar_sys(); }
static inline void omprpc_fence_release_(void) { __nvvm_membar_sys(); }
static inline uint32_t omprpc_fetch_or_(uint32_t *p, uint32_t v) {
  return (uint32_t)__nvvm_atom_sys_or_gen_i((int *)p, (int)v);
}
static inline uint32_t omprpc_fetch_and_(uint32_t *p, uint32_t v) {
  return (uint32_t)__nvvm_atom_sys_and_gen_i((int *)p, (int)v);
}
#else
static inline void omprpc_fence_acquire_(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static inline void omprpc_fence_release_(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static inline uint32_t omprpc_fetch_or_(uint32_t *p, uint32_t v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
static inline uint32_t omprpc_fetch_and_(uint32_t *p, uint32_t v) {
  return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
}
#endif

/* ---- Bytes (no libc on a GPU) ---------------------------------------------------------------------- */

static inline uint64_t omprpc_strlen_(const char *s) {
  uint64_t n = 0;
  while (s[n])
    ++n;
  return n;
}
static inline void omprpc_copy_(void *dst, const void *src, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    ((char *)dst)[i] = ((const char *)src)[i];
}
static inline void omprpc_zero_(omprpc_packet *packet) {
  for (int i = 0; i < 8; ++i)
    packet->data[i] = 0;
}

/* ---- The client of LLVM libc 19.1's protocol -------------------------------------------------------- */

/* Opcodes of LLVM libc 19.1 (llvmlibc_rpc_opcodes.h). */
enum {
  OMPRPC_OP_EXIT = 1,
  OMPRPC_OP_WRITE_TO_STDOUT = 2,
  OMPRPC_OP_WRITE_TO_STDERR = 3,
  OMPRPC_OP_WRITE_TO_STREAM = 4,
  OMPRPC_OP_WRITE_TO_STDOUT_NEWLINE = 5,
  OMPRPC_OP_READ_FROM_STREAM = 6,
  OMPRPC_OP_READ_FGETS = 7,
  OMPRPC_OP_OPEN_FILE = 8,
  OMPRPC_OP_CLOSE_FILE = 9,
  OMPRPC_OP_MALLOC = 10,
  OMPRPC_OP_FREE = 11,
  OMPRPC_OP_ABORT = 13,
  OMPRPC_OP_FEOF = 14,
  OMPRPC_OP_FERROR = 15,
  OMPRPC_OP_CLEARERR = 16,
  OMPRPC_OP_FSEEK = 17,
  OMPRPC_OP_FTELL = 18,
  OMPRPC_OP_FFLUSH = 19,
  OMPRPC_OP_UNGETC = 20,
  OMPRPC_OP_REMOVE = 27,
  /* The plugin's own: printf formatted by the host's C library, a failed assert, rpc_host_call
   * with the function's address checked and its result returned, and snprintf formatted by the host's
   * C library into a buffer whose bytes come back. */
  OMPRPC_OP_PRINTF = 0x7f00,
  OMPRPC_OP_ASSERT_FAIL = 0x7f01,
  OMPRPC_OP_HOST_FUNCTION = 0x7f02,
  OMPRPC_OP_FORMAT_TO_BUFFER = 0x7f03,
  /* strtod, strtof and strtold converted by the host's C library (device/strtod.c). */
  OMPRPC_OP_STRTOD = 0x7f04,
  /* sscanf, fscanf and scanf parsed by the host's C library (src/rpc/services/scan.rs). */
  OMPRPC_OP_SCAN = 0x7f05,
  /* getenv answered by the host's C library (device/omprpc_libc.c, src/rpc/services/getenv.rs). */
  OMPRPC_OP_GETENV = 0x7f06,
  OMPRPC_OP_FIRST_USER = 0x8000
};

/* A host stream as the device names it: the host FILE*, or 1/2/3 for stdin/stdout/stderr. */
typedef struct omprpc_file omprpc_file;
#define OMPRPC_STDIN ((omprpc_file *)(uintptr_t)1)
#define OMPRPC_STDOUT ((omprpc_file *)(uintptr_t)2)
#define OMPRPC_STDERR ((omprpc_file *)(uintptr_t)3)

/* A port's header in the mailbox: the active lanes and the opcode (16 bytes). */
typedef struct {
  uint64_t mask;
  uint16_t opcode;
} omprpc_header;

/* The 19.1 client object (552 bytes), filled in by the host: the mailbox's arrays, and one lock bit per
 * port, private to the device. Packets are indexed port * OMPRPC_LANES + lane. */
typedef struct {
  uint32_t port_count;
  uint32_t *inbox;  /* written by the host */
  uint32_t *outbox; /* written by the device */
  omprpc_header *header;
  omprpc_packet *packet;
  uint32_t lock[128];
} omprpc_client;

/* LLVM's plugins of 17-19 keep this contract with every RPC client, LLVM libc's own included: the image
 * exports __llvm_libc_rpc_client, a pointer to a client object of its own, and the host copies the
 * client (port count, mailbox addresses) to where the pointer points; the pointer itself is never
 * written. This header keeps its object as libc does and uses it directly, so that the plugin cannot
 * tell the two kinds of client apart. Each image has its own object, bound inside the image: the
 * pointer is exported (the host looks it up in the loaded image) but protected, and the object
 * hidden, so that neither binds to a same-named copy elsewhere in the process (the host program's,
 * another image's). An object the host has not filled has no ports: omprpc_rpc_active() is 0. */
__attribute__((weak, visibility("hidden"))) omprpc_client omprpc_client_object;
__attribute__((weak, visibility("protected"))) omprpc_client *__llvm_libc_rpc_client = &omprpc_client_object;
/* How many lanes share a port in this image's code, for the host to give the image a server of that
 * lane size (a host image built with OMPRPC_SIMULATED_LANES, a wave32 or wave64 AMD image). */
__attribute__((weak, used, visibility("protected"))) uint32_t __omprpc_rpc_lanes = OMPRPC_LANES;

/* What this image's code rings after writing a request, so that the host's serving threads can sleep
 * while no call comes: written by the host when it loads the image (0, nothing to ring, until then and
 * on devices that cannot wake the host, NVIDIA GPUs, which the host looks at on a backoff instead). On
 * the host device it is the address of the serving threads' doorbell: two 32-bit words, a count of
 * rings (a futex) and a count of sleepers (the futex is woken only when one sleeps). On AMD GPUs it is
 * an HSA signal's handle, stored to through ockl as ROCm's hostcall does: for a signal the host waits
 * on with interrupts, the store also writes the signal's event id to its mailbox and raises the
 * interrupt (s_sendmsg), which wakes the host thread. */
__attribute__((weak, used, visibility("protected"))) uint64_t __omprpc_rpc_doorbell = 0;

#if defined(__AMDGCN__)
/* rocm-device-libs' ockl (linked by clang for AMD GPUs): hsa_signal_t is passed as its 64-bit handle. */
void __ockl_hsa_signal_store(uint64_t signal, int64_t value, int order);
#endif

typedef struct {
  uint32_t rings;
  uint32_t sleepers;
} omprpc_doorbell_;

/* Rings the doorbell after the lanes of `mask` handed a port to the host (their flip is stored). The
 * count is bumped and the sleepers read in one sequentially consistent order with the host's, which
 * counts itself asleep before it reads the rings and looks at the ports: either the host sees this
 * request, or this sees the sleeper and wakes it. */
static inline void omprpc_ring_(uint64_t mask) {
#if !OMPRPC_GPU_
  uint64_t bell = __atomic_load_n(&__omprpc_rpc_doorbell, __ATOMIC_RELAXED);
  if (!bell || !omprpc_is_leader_(mask))
    return;
  omprpc_doorbell_ *doorbell = (omprpc_doorbell_ *)(uintptr_t)bell;
  __atomic_fetch_add(&doorbell->rings, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&doorbell->sleepers, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, &doorbell->rings, FUTEX_WAKE, INT_MAX, (void *)0, (void *)0, 0);
#elif defined(__AMDGCN__)
  uint64_t bell = __atomic_load_n(&__omprpc_rpc_doorbell, __ATOMIC_RELAXED);
  if (bell && omprpc_is_leader_(mask))
    __ockl_hsa_signal_store(bell, 1, __ATOMIC_RELEASE);
#else
  (void)mask;
#endif
}

/* One open port, as each lane of the warp that opened it sees it. */
typedef struct {
  omprpc_client *client;
  uint64_t mask;
  uint32_t index;
  uint32_t out;
  int receive;
  int owns_buffer;
} omprpc_client_port;

static inline int omprpc_rpc_active(void) { return omprpc_load_(&omprpc_client_object.port_count) != 0; }

static inline void omprpc_unlock_port_(omprpc_client *c, uint32_t index) {
  omprpc_fence_release_();
  omprpc_fetch_and_(&c->lock[index / 32], ~(1u << (index % 32)));
}

/* Opens a port for the active lanes that call with this lane's opcode: the group's leader locks a port
 * the client owns and writes its header. Lanes with other opcodes open ports of their own at the same
 * time, so that each call reaches its own handler (the opcode is in the port's header, one per port). */
static inline omprpc_client_port omprpc_open(uint16_t opcode) {
  omprpc_client *c = &omprpc_client_object;
  uint64_t mask = omprpc_match_(omprpc_lane_mask_(), opcode);
  int leader = omprpc_is_leader_(mask);
  uint32_t ports = c->port_count;
  uint32_t index = omprpc_broadcast_(mask, omprpc_start_port_()) % ports;
  for (uint32_t spins = 0;; ++index) {
    if (index >= ports)
      index = 0;
    uint32_t got = 0, out = 0;
    if (leader) {
      uint32_t bit = 1u << (index % 32);
      if (!(omprpc_fetch_or_(&c->lock[index / 32], bit) & bit)) {
        omprpc_fence_acquire_();
        uint32_t in = omprpc_load_(&c->inbox[index]);
        out = omprpc_load_(&c->outbox[index]);
        if (in == out)
          got = 1;
        else
          omprpc_unlock_port_(c, index);
      }
    }
    if (!omprpc_broadcast_(mask, got)) {
      omprpc_pause_(&spins);
      continue;
    }
    out = omprpc_broadcast_(mask, out);
    if (leader) {
      c->header[index].opcode = opcode;
      c->header[index].mask = mask;
    }
    omprpc_sync_lanes_(mask);
    omprpc_client_port port = {c, mask, index, out, 0, 1};
    return port;
  }
}

static inline omprpc_packet *omprpc_my_packet_(omprpc_client_port *p) {
  return &p->client->packet[(uint64_t)p->index * OMPRPC_LANES + omprpc_lane_id_()];
}

static inline void omprpc_wait_(omprpc_client_port *p, uint32_t in) {
  uint32_t spins = 0;
  while (in != p->out) {
    omprpc_pause_(&spins);
    in = omprpc_load_(&p->client->inbox[p->index]);
  }
  omprpc_fence_acquire_();
}

/* Hands the port to the host once every lane has written its packet. As in LLVM libc's client, every
 * active lane orders its own packet writes before the flip with a system-scope release fence and then
 * stores the (same) new outbox value, so no lane relies on another lane's fence. Were only the leader
 * to store after the warp barrier, the other lanes' packet writes would reach the host before the flip
 * only if bar.warp.sync ordered them at system scope, which the PTX memory model does not state (it
 * speaks of ordering among the threads of the barrier); the tests' PTX check asserts a membar.sys
 * before every outbox store. */
static inline void omprpc_flip_(omprpc_client_port *p) {
  omprpc_sync_lanes_(p->mask);
  p->out = !p->out;
  omprpc_fence_release_();
  omprpc_store_(&p->client->outbox[p->index], p->out);
  omprpc_ring_(p->mask);
}

/* Sends this lane's packet: waits until the port is the client's, fills it, hands it over. */
static inline void omprpc_send(omprpc_client_port *p, const omprpc_packet *packet) {
  omprpc_wait_(p, p->owns_buffer ? p->out : omprpc_load_(&p->client->inbox[p->index]));
  *omprpc_my_packet_(p) = *packet;
  omprpc_flip_(p);
  p->owns_buffer = 0;
  p->receive = 0;
}

/* Receives this lane's packet. */
static inline void omprpc_recv(omprpc_client_port *p, omprpc_packet *packet) {
  if (p->receive) {
    omprpc_flip_(p);
    p->owns_buffer = 0;
  }
  omprpc_wait_(p, p->owns_buffer ? p->out : omprpc_load_(&p->client->inbox[p->index]));
  *packet = *omprpc_my_packet_(p);
  omprpc_sync_lanes_(p->mask);
  p->receive = 1;
  p->owns_buffer = 1;
}

static inline void omprpc_close(omprpc_client_port *p) {
  omprpc_sync_lanes_(p->mask);
  if (omprpc_is_leader_(p->mask))
    omprpc_unlock_port_(p->client, p->index);
  omprpc_sync_lanes_(p->mask);
}

/* Sends this lane's `size` bytes: the size and the first 56 bytes, then 64 bytes a packet, for as many
 * packets as the longest string of the active lanes needs. */
static inline void omprpc_send_n(omprpc_client_port *p, const void *src, uint64_t size) {
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = size;
  omprpc_copy_(&packet.data[1], src, size < 56 ? size : 56);
  omprpc_send(p, &packet);
  for (uint64_t idx = 56; omprpc_ballot_(p->mask, idx < size); idx += 64) {
    if (idx < size)
      omprpc_copy_(packet.data, (const char *)src + idx, size - idx < 64 ? size - idx : 64);
    omprpc_send(p, &packet);
  }
}

/* Receives this lane's byte string into `dst` (at most `capacity` bytes kept); returns its full size. */
static inline uint64_t omprpc_recv_n(omprpc_client_port *p, void *dst, uint64_t capacity) {
  omprpc_packet packet;
  omprpc_recv(p, &packet);
  uint64_t size = packet.data[0];
  uint64_t first = size < 56 ? size : 56;
  omprpc_copy_(dst, &packet.data[1], first < capacity ? first : capacity);
  for (uint64_t idx = 56; omprpc_ballot_(p->mask, idx < size); idx += 64) {
    omprpc_recv(p, &packet);
    uint64_t len = size > idx ? (size - idx < 64 ? size - idx : 64) : 0;
    if (idx < capacity)
      omprpc_copy_((char *)dst + idx, packet.data, idx + len <= capacity ? len : capacity - idx);
  }
  return size;
}

/* ---- Streams ------------------------------------------------------------------------------------- */

#if !OMPRPC_GPU_
static inline FILE *omprpc_host_stream_(omprpc_file *f) {
  uintptr_t v = (uintptr_t)f;
  return v == 1 ? stdin : v == 2 ? stdout : v == 3 ? stderr : (FILE *)v;
}
#endif

/* The host serves some requests with the stream as a raw FILE*: only real host streams may go there. */
static inline int omprpc_is_file_(omprpc_file *f) { return (uintptr_t)f > 3; }
static inline int omprpc_writable_(omprpc_file *f) {
  return f == OMPRPC_STDOUT || f == OMPRPC_STDERR || omprpc_is_file_(f);
}

/* One packet out (data[0..2]), one back; the result is data[0] of the reply. */
static inline uint64_t omprpc_simple_(uint16_t op, uint64_t a, uint64_t b, uint64_t c) {
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = a;
  packet.data[1] = b;
  packet.data[2] = c;
  omprpc_client_port port = omprpc_open(op);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return packet.data[0];
}

static inline uint64_t omprpc_write_(omprpc_file *f, const void *data, uint64_t size, uint16_t op) {
  omprpc_packet packet;
  omprpc_zero_(&packet);
  omprpc_client_port port = omprpc_open(op);
  if (op == OMPRPC_OP_WRITE_TO_STREAM) {
    packet.data[0] = (uint64_t)(uintptr_t)f;
    omprpc_send(&port, &packet);
  }
  omprpc_send_n(&port, data, size);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return packet.data[0];
}

static inline uint16_t omprpc_write_opcode_(omprpc_file *f) {
  return f == OMPRPC_STDOUT ? OMPRPC_OP_WRITE_TO_STDOUT
         : f == OMPRPC_STDERR ? OMPRPC_OP_WRITE_TO_STDERR
                              : OMPRPC_OP_WRITE_TO_STREAM;
}

static inline size_t omprpc_fwrite(const void *data, size_t size, size_t count, omprpc_file *f) {
  if (size == 0 || count == 0 || !omprpc_writable_(f))
    return 0;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return fwrite(data, size, count, omprpc_host_stream_(f));
#else
  if (!omprpc_rpc_active())
    return 0;
#endif
  return (size_t)omprpc_write_(f, data, size * count, omprpc_write_opcode_(f)) / size;
}

static inline int omprpc_fputs(const char *s, omprpc_file *f) {
  if (!omprpc_writable_(f))
    return -1;
  uint64_t n = omprpc_strlen_(s);
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return fputs(s, omprpc_host_stream_(f));
#else
  if (!omprpc_rpc_active())
    return -1;
#endif
  return omprpc_write_(f, s, n, omprpc_write_opcode_(f)) == n ? 0 : -1;
}

static inline int omprpc_puts(const char *s) {
  uint64_t n = omprpc_strlen_(s);
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return puts(s);
#else
  if (!omprpc_rpc_active())
    return -1;
#endif
  return omprpc_write_(OMPRPC_STDOUT, s, n, OMPRPC_OP_WRITE_TO_STDOUT_NEWLINE) == n + 1 ? 0 : -1;
}

static inline omprpc_file *omprpc_fopen(const char *path, const char *mode) {
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return (omprpc_file *)fopen(path, mode);
#else
  if (!omprpc_rpc_active())
    return 0;
#endif
  omprpc_packet packet;
  omprpc_zero_(&packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_OPEN_FILE);
  omprpc_send_n(&port, path, omprpc_strlen_(path) + 1);
  uint64_t mode_len = omprpc_strlen_(mode) + 1;
  omprpc_copy_(packet.data, mode, mode_len < sizeof packet.data ? mode_len : sizeof packet.data - 1);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (omprpc_file *)(uintptr_t)packet.data[0];
}

static inline int omprpc_fclose(omprpc_file *f) {
  if (!omprpc_is_file_(f))
    return -1;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return fclose(omprpc_host_stream_(f));
#else
  if (!omprpc_rpc_active())
    return -1;
#endif
  return omprpc_simple_(OMPRPC_OP_CLOSE_FILE, (uintptr_t)f, 0, 0) == 0 ? 0 : -1;
}

static inline size_t omprpc_fread(void *buffer, size_t size, size_t count, omprpc_file *f) {
  if (size == 0 || count == 0 || !f)
    return 0;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return fread(buffer, size, count, omprpc_host_stream_(f));
#else
  if (!omprpc_rpc_active())
    return 0;
#endif
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = size * count;
  packet.data[1] = (uintptr_t)f;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_READ_FROM_STREAM);
  omprpc_send(&port, &packet);
  omprpc_recv_n(&port, buffer, size * count);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (size_t)packet.data[0] / size;
}

static inline char *omprpc_fgets(char *s, int count, omprpc_file *f) {
  if (count < 1 || !f)
    return 0;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return fgets(s, count, omprpc_host_stream_(f));
#else
  if (!omprpc_rpc_active())
    return 0;
#endif
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = (uint64_t)count;
  packet.data[1] = (uintptr_t)f;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_READ_FGETS);
  omprpc_send(&port, &packet);
  uint64_t got = omprpc_recv_n(&port, s, (uint64_t)count);
  omprpc_close(&port);
  return got == 0 ? 0 : s;
}

#if !OMPRPC_GPU_
#define OMPRPC_HOST_OR_(host_call, gpu_result) \
  if (!omprpc_rpc_active())                    \
  return host_call
#else
#define OMPRPC_HOST_OR_(host_call, gpu_result) \
  if (!omprpc_rpc_active())                    \
  return gpu_result
#endif

static inline int omprpc_fseek(omprpc_file *f, long offset, int whence) {
  if (!f)
    return -1;
  OMPRPC_HOST_OR_(fseek(omprpc_host_stream_(f), offset, whence), -1);
  return (int)omprpc_simple_(OMPRPC_OP_FSEEK, (uintptr_t)f, (uint64_t)offset, (uint64_t)whence);
}

static inline long omprpc_ftell(omprpc_file *f) {
  if (!f)
    return -1L;
  OMPRPC_HOST_OR_(ftell(omprpc_host_stream_(f)), -1L);
  return (long)omprpc_simple_(OMPRPC_OP_FTELL, (uintptr_t)f, 0, 0);
}

static inline int omprpc_fflush(omprpc_file *f) {
  OMPRPC_HOST_OR_(fflush(omprpc_host_stream_(f)), -1);
  return (int)omprpc_simple_(OMPRPC_OP_FFLUSH, (uintptr_t)f, 0, 0);
}

static inline int omprpc_feof(omprpc_file *f) {
  if (!f)
    return 0;
  OMPRPC_HOST_OR_(feof(omprpc_host_stream_(f)), 0);
  return (int)omprpc_simple_(OMPRPC_OP_FEOF, (uintptr_t)f, 0, 0);
}

static inline int omprpc_ferror(omprpc_file *f) {
  if (!f)
    return 1;
  OMPRPC_HOST_OR_(ferror(omprpc_host_stream_(f)), 1);
  return (int)omprpc_simple_(OMPRPC_OP_FERROR, (uintptr_t)f, 0, 0);
}

static inline void omprpc_clearerr(omprpc_file *f) {
  if (!f)
    return;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active()) {
    clearerr(omprpc_host_stream_(f));
    return;
  }
#else
  if (!omprpc_rpc_active())
    return;
#endif
  (void)omprpc_simple_(OMPRPC_OP_CLEARERR, (uintptr_t)f, 0, 0);
}

/* Pushes c back onto the host stream; returns c, or EOF (-1). */
static inline int omprpc_ungetc(int c, omprpc_file *f) {
  if (!f)
    return -1;
  OMPRPC_HOST_OR_(ungetc(c, omprpc_host_stream_(f)), -1);
  return (int)omprpc_simple_(OMPRPC_OP_UNGETC, (uint64_t)(int64_t)c, (uintptr_t)f, 0);
}

/* The next byte of the host stream, or EOF (-1), as LLVM libc reads it: a one-byte fread. */
static inline int omprpc_fgetc(omprpc_file *f) {
  unsigned char c;
  return omprpc_fread(&c, 1, 1, f) == 1 ? c : -1;
}

/* LLVM libc's rpc_host_call: the host calls fn, a host function taking a pointer, with a copy of the
 * size bytes at data, and this returns what fn returned (0 when the host refused fn's address: it must
 * lie in the program's or a library's code). */
static inline unsigned long long omprpc_host_call(void *fn, const void *data, size_t size) {
  OMPRPC_HOST_OR_(((unsigned long long (*)(void *))fn)((void *)data), 0);
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = (uintptr_t)fn;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_HOST_FUNCTION);
  omprpc_send_n(&port, data, size);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return packet.data[0];
}

static inline int omprpc_remove(const char *path) {
  OMPRPC_HOST_OR_(remove(path), -1);
  omprpc_packet packet;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_REMOVE);
  omprpc_send_n(&port, path, omprpc_strlen_(path) + 1);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (int)packet.data[0];
}

/* ---- Memory, exit, abort -------------------------------------------------------------------------- */

/* Device memory from the host's allocator for the device. */
static inline void *omprpc_malloc(size_t size) {
  OMPRPC_HOST_OR_(malloc(size), 0);
  return (void *)(uintptr_t)omprpc_simple_(OMPRPC_OP_MALLOC, size, 0, 0);
}

static inline void omprpc_free(void *ptr) {
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active()) {
    free(ptr);
    return;
  }
#else
  if (!omprpc_rpc_active())
    return;
#endif
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = (uintptr_t)ptr;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_FREE);
  omprpc_send(&port, &packet);
  omprpc_close(&port);
}

static inline void omprpc_halt_(void) {
  for (uint32_t spins = 0;;)
    omprpc_pause_(&spins); /* the host ends the process */
}

/* Ends the host process with `status` once the host has flushed what the device wrote. */
static inline void omprpc_exit(int status) {
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    exit(status);
#else
  if (!omprpc_rpc_active())
    __builtin_trap();
#endif
  omprpc_packet packet;
  omprpc_zero_(&packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_EXIT);
  omprpc_send(&port, &packet); /* make sure the host listens */
  omprpc_recv(&port, &packet);
  packet.data[0] = (uint32_t)status;
  omprpc_send(&port, &packet);
  omprpc_close(&port);
  omprpc_halt_();
}

/* Aborts the host process, saying so on stderr and flushing what was written first. */
static inline void omprpc_abort(void) {
  static const char message[] = "omprpc: abort() called on the device\n";
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    abort();
#else
  if (!omprpc_rpc_active())
    __builtin_trap();
#endif
  omprpc_write_(OMPRPC_STDERR, message, sizeof message - 1, OMPRPC_OP_WRITE_TO_STDERR);
  omprpc_simple_(OMPRPC_OP_FFLUSH, 0, 0, 0); /* stream 0 is fflush(NULL): every host stream */
  omprpc_packet packet;
  omprpc_zero_(&packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_ABORT);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_send(&port, &packet);
  omprpc_close(&port);
  omprpc_halt_();
}

/* ---- User host calls ------------------------------------------------------------------------------ */

/* Calls the host handler of user opcode `opcode` (0x8000 or above) with this lane's packet, which the
 * handler's reply overwrites. The handler receives one packet per lane and sends one back. Without a
 * server (omprpc_rpc_active() == 0) the reply is all zeros. */
static inline void omprpc_call(uint16_t opcode, omprpc_packet *packet) {
  if (!omprpc_rpc_active()) {
    omprpc_zero_(packet);
    return;
  }
  omprpc_client_port port = omprpc_open(opcode);
  omprpc_send(&port, packet);
  omprpc_recv(&port, packet);
  omprpc_close(&port);
}

/* Calls the host handler of `opcode` with `in_size` bytes; the handler's byte reply is copied to `out`
 * (at most `out_capacity` bytes kept). Returns the size of the reply. The handler receives with
 * omprpc_port_recv_n and replies with omprpc_port_send_n. */
static inline uint64_t omprpc_call_bytes(uint16_t opcode, const void *in, uint64_t in_size, void *out,
                                         uint64_t out_capacity) {
  if (!omprpc_rpc_active())
    return 0;
  omprpc_client_port port = omprpc_open(opcode);
  omprpc_send_n(&port, in, in_size);
  uint64_t size = omprpc_recv_n(&port, out, out_capacity);
  omprpc_close(&port);
  return size;
}

/* ---- printf ------------------------------------------------------------------------------------------
 * Each argument is recorded with its type (omprpc_arg); the format decides how it is packed for the
 * host, each value at its natural alignment, as clang lays out printf's arguments on a GPU. */

typedef struct {
  union {
    long long i;
    unsigned long long u;
    double d;
    const void *p;
#if !OMPRPC_GPU_
    /* A long double's bytes, not a long double: with a long double member the compiler copies the
     * whole union through the x87 unit (fldt/fstpt), which keeps an integer's or a pointer's bits
     * only while the bytes above them happen to be zero (and not at all under valgrind). */
    unsigned char ld[sizeof(long double)];
#endif
  } v;
  int kind;
} omprpc_arg;

#if !OMPRPC_GPU_
static inline long double omprpc_arg_ldouble_(const omprpc_arg *a) {
  long double v;
  omprpc_copy_(&v, a->v.ld, sizeof v);
  return v;
}
#endif

enum { OMPRPC_ARG_INT, OMPRPC_ARG_UINT, OMPRPC_ARG_DOUBLE, OMPRPC_ARG_PTR, OMPRPC_ARG_LDOUBLE };

static inline omprpc_arg omprpc_arg_i_(long long v) {
  omprpc_arg a;
  a.v.i = v;
  a.kind = OMPRPC_ARG_INT;
  return a;
}
static inline omprpc_arg omprpc_arg_u_(unsigned long long v) {
  omprpc_arg a;
  a.v.u = v;
  a.kind = OMPRPC_ARG_UINT;
  return a;
}
static inline omprpc_arg omprpc_arg_d_(double v) {
  omprpc_arg a;
  a.v.d = v;
  a.kind = OMPRPC_ARG_DOUBLE;
  return a;
}
static inline omprpc_arg omprpc_arg_p_(const void *v) {
  omprpc_arg a;
  a.v.p = v;
  a.kind = OMPRPC_ARG_PTR;
  return a;
}
#if !OMPRPC_GPU_
static inline omprpc_arg omprpc_arg_ld_(long double v) {
  omprpc_arg a;
  omprpc_copy_(a.v.ld, &v, sizeof v);
  a.kind = OMPRPC_ARG_LDOUBLE;
  return a;
}
#endif

/* What a conversion consumes. A refused conversion (%n, which would make the host write through a
 * device pointer, or a positional %1$d) makes the host print nothing and return -1. */
enum {
  OMPRPC_WANT_NONE,
  OMPRPC_WANT_INT,
  OMPRPC_WANT_LONG,
  OMPRPC_WANT_DOUBLE,
  OMPRPC_WANT_LDOUBLE,
  OMPRPC_WANT_PTR,
  OMPRPC_WANT_STR,
  OMPRPC_WANT_WSTR,
  OMPRPC_WANT_REFUSED
};

/* One conversion of a format, read as the host's C library reads it (the plugin's reader,
 * src/rpc/services/printf.rs, keeps the same rules): `*` width and precision (each an int argument), a literal
 * precision (-1 when none), what its value is. `start` and `end` delimit it in the format. */
typedef struct {
  const char *start;
  const char *end;
  int star_width;
  int star_precision;
  int precision;
  int want;
} omprpc_spec_;

static inline int omprpc_in_(char c, const char *set) {
  for (; *set; ++set)
    if (*set == c)
      return 1;
  return 0;
}

/* Whether digits at `p` are followed by '$' (a positional argument). */
static inline int omprpc_positional_(const char *p) {
  const char *q = p;
  while (*q >= '0' && *q <= '9')
    ++q;
  return q != p && *q == '$';
}

/* Finds the next conversion at or after `p`; 0 when there is none. */
static inline int omprpc_next_spec_(const char *p, omprpc_spec_ *spec) {
  for (; *p; ++p) {
    if (*p != '%')
      continue;
    spec->start = p++;
    if (*p == '%')
      continue;
    spec->star_width = spec->star_precision = 0;
    spec->precision = -1;
    int refused = omprpc_positional_(p);
    while (*p && omprpc_in_(*p, "-+ #0'I"))
      ++p;
    if (*p == '*') {
      spec->star_width = 1;
      refused |= omprpc_positional_(++p);
    } else {
      while (*p >= '0' && *p <= '9')
        ++p;
    }
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        spec->star_precision = 1;
        refused |= omprpc_positional_(++p);
      } else {
        spec->precision = 0;
        while (*p >= '0' && *p <= '9')
          spec->precision = spec->precision * 10 + (*p++ - '0');
      }
    }
    int longs = 0, big = 0;
    for (;; ++p) {
      if (*p == 'h')
        continue;
      if (*p == 'l')
        ++longs;
      else if (*p == 'q' || *p == 'j' || *p == 'z' || *p == 'Z' || *p == 't')
        longs = 2;
      else if (*p == 'L')
        big = 1, longs = 2;
      else
        break;
    }
    if (!*p)
      return 0;
    spec->end = p + 1;
    switch (*p) {
    case 'd': case 'i': case 'o': case 'u': case 'x': case 'X': case 'b': case 'B':
      spec->want = longs ? OMPRPC_WANT_LONG : OMPRPC_WANT_INT;
      break;
    case 'c': case 'C':
      spec->want = OMPRPC_WANT_INT;
      break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
      spec->want = big ? OMPRPC_WANT_LDOUBLE : OMPRPC_WANT_DOUBLE;
      break;
    case 's':
      spec->want = longs ? OMPRPC_WANT_WSTR : OMPRPC_WANT_STR;
      break;
    case 'S':
      spec->want = OMPRPC_WANT_WSTR;
      break;
    case 'p':
      spec->want = OMPRPC_WANT_PTR;
      break;
    case 'n':
      spec->want = OMPRPC_WANT_REFUSED;
      break;
    default: /* unknown: text on the host, no argument */
      spec->want = OMPRPC_WANT_NONE;
      break;
    }
    if (refused)
      spec->want = OMPRPC_WANT_REFUSED;
    return 1;
  }
  return 0;
}

/* Bytes (and alignment) of a conversion's value in the argument struct. */
static inline uint64_t omprpc_want_size_(int want) {
  switch (want) {
  case OMPRPC_WANT_INT:
    return 4;
  case OMPRPC_WANT_LDOUBLE:
    return 16;
  case OMPRPC_WANT_NONE:
  case OMPRPC_WANT_REFUSED:
    return 0;
  default:
    return 8;
  }
}

static inline long long omprpc_as_long_(const omprpc_arg *a) {
  switch (a->kind) {
  case OMPRPC_ARG_DOUBLE:
    return (long long)a->v.d;
#if !OMPRPC_GPU_
  case OMPRPC_ARG_LDOUBLE:
    return (long long)omprpc_arg_ldouble_(a);
#endif
  default:
    return a->v.i;
  }
}

static inline double omprpc_as_double_(const omprpc_arg *a) {
  switch (a->kind) {
  case OMPRPC_ARG_DOUBLE:
    return a->v.d;
  case OMPRPC_ARG_INT:
    return (double)a->v.i;
  case OMPRPC_ARG_UINT:
    return (double)a->v.u;
#if !OMPRPC_GPU_
  case OMPRPC_ARG_LDOUBLE:
    return (double)omprpc_arg_ldouble_(a);
#endif
  default:
    return 0.0;
  }
}

/* Writes `d` as an x87 80-bit extended value (16 bytes, little-endian), as the host's long double, for
 * code that has no long double of its own. */
static inline void omprpc_x87_from_double_(double d, unsigned char out[16]) {
  uint64_t bits;
  omprpc_copy_(&bits, &d, 8);
  uint64_t sign = bits >> 63, exponent = (bits >> 52) & 0x7ff, fraction = bits & (((uint64_t)1 << 52) - 1);
  uint64_t mantissa;
  uint32_t biased;
  if (exponent == 0 && fraction == 0) {
    mantissa = 0;
    biased = 0;
  } else if (exponent == 0x7ff) {
    mantissa = ((uint64_t)1 << 63) | (fraction << 11);
    biased = 0x7fff;
  } else if (exponent == 0) { /* subnormal double: normal in x87 */
    int shift = __builtin_clzll(fraction);
    mantissa = fraction << shift;
    biased = (uint32_t)(16383 - 1022 - (shift - 11));
  } else {
    mantissa = ((uint64_t)1 << 63) | (fraction << 11);
    biased = (uint32_t)(exponent - 1023 + 16383);
  }
  uint16_t top = (uint16_t)((sign << 15) | biased);
  for (int i = 0; i < 16; ++i)
    out[i] = 0;
  omprpc_copy_(out, &mantissa, 8);
  omprpc_copy_(out + 8, &top, 2);
}

/* Appends one value of `size` bytes at its natural alignment; returns the bytes needed so far. */
static inline uint64_t omprpc_put_(char *buffer, uint64_t used, uint64_t capacity, const void *value, uint64_t size) {
  uint64_t at = (used + size - 1) / size * size;
  if (at + size <= capacity)
    omprpc_copy_(buffer + at, value, size);
  return at + size;
}

/* Packs `args` (count of them) for `format` as the host reads them; returns the bytes needed (may
 * exceed `capacity`, in which case the caller packs again into a bigger buffer). */
static inline uint64_t omprpc_pack_(const char *format, const omprpc_arg *args, uint32_t count, char *buffer,
                                    uint64_t capacity) {
  omprpc_spec_ spec;
  uint64_t used = 0;
  uint32_t next = 0;
  const omprpc_arg none = omprpc_arg_i_(0);
  for (const char *p = format; omprpc_next_spec_(p, &spec); p = spec.end) {
    if (spec.want == OMPRPC_WANT_REFUSED)
      break; /* the host prints nothing */
    for (int star = 0; star < spec.star_width + spec.star_precision; ++star) {
      int v = (int)omprpc_as_long_(next < count ? &args[next] : &none);
      ++next;
      used = omprpc_put_(buffer, used, capacity, &v, sizeof v);
    }
    if (spec.want == OMPRPC_WANT_NONE)
      continue;
    const omprpc_arg *a = next < count ? &args[next] : &none;
    ++next;
    switch (spec.want) {
    case OMPRPC_WANT_INT: {
      int v = (int)omprpc_as_long_(a);
      used = omprpc_put_(buffer, used, capacity, &v, sizeof v);
      break;
    }
    case OMPRPC_WANT_LONG: {
      long long v = omprpc_as_long_(a);
      used = omprpc_put_(buffer, used, capacity, &v, sizeof v);
      break;
    }
    case OMPRPC_WANT_DOUBLE: {
      double v = omprpc_as_double_(a);
      used = omprpc_put_(buffer, used, capacity, &v, sizeof v);
      break;
    }
    case OMPRPC_WANT_LDOUBLE: {
      unsigned char v[16];
#if !OMPRPC_GPU_
      long double ld = a->kind == OMPRPC_ARG_LDOUBLE ? omprpc_arg_ldouble_(a) : (long double)omprpc_as_double_(a);
      for (int i = 0; i < 16; ++i)
        v[i] = 0;
      omprpc_copy_(v, &ld, 10);
#else
      omprpc_x87_from_double_(omprpc_as_double_(a), v);
#endif
      used = omprpc_put_(buffer, used, capacity, v, 16);
      break;
    }
    default: {
      const void *v = a->kind == OMPRPC_ARG_PTR ? a->v.p : (const void *)(uintptr_t)a->v.u;
      used = omprpc_put_(buffer, used, capacity, &v, sizeof v);
      break;
    }
    }
  }
  return used;
}

/* ---- printf's request ---------------------------------------------------------------------------------
 * One byte string per lane, sent without copying it anywhere first (GPU stacks are small): a 16-byte
 * head (the stream; the format's length with its NUL; the argument struct's length), the format, the
 * argument struct as clang lays it out for __llvm_omp_vprintf, then for each %s (%ls) conversion a
 * u64 byte count (~0 for NULL) and the bytes. The host prints it with its own vfprintf and replies
 * with the count (src/rpc/services/printf.rs). */

/* Walks the %s and %ls arguments of a format, in order. */
typedef struct {
  const char *scan;
  const char *args;
  uint64_t args_len;
  uint64_t at;
} omprpc_strings_;

static inline uint64_t omprpc_read_arg_(const omprpc_strings_ *w, uint64_t at, uint64_t size) {
  uint64_t v = 0;
  if (at + size <= w->args_len)
    omprpc_copy_(&v, w->args + at, size);
  return v;
}

/* The next string argument: its bytes and their count (~0 for NULL); 0 when there is none left. A
 * precision bounds the bytes read, as C's printf reads no further (the array need not end in NUL). */
static inline int omprpc_next_string_(omprpc_strings_ *w, const char **bytes, uint64_t *count) {
  omprpc_spec_ spec;
  while (omprpc_next_spec_(w->scan, &spec)) {
    w->scan = spec.end;
    if (spec.want == OMPRPC_WANT_REFUSED)
      break;
    int64_t precision = spec.precision;
    for (int star = 0; star < spec.star_width + spec.star_precision; ++star) {
      w->at = (w->at + 3) / 4 * 4;
      int v = (int)(uint32_t)omprpc_read_arg_(w, w->at, 4);
      w->at += 4;
      if (star == spec.star_width) /* the precision's star */
        precision = v < 0 ? -1 : v;
    }
    uint64_t size = omprpc_want_size_(spec.want);
    if (!size)
      continue;
    w->at = (w->at + size - 1) / size * size;
    uint64_t here = w->at;
    w->at += size;
    if (spec.want != OMPRPC_WANT_STR && spec.want != OMPRPC_WANT_WSTR)
      continue;
    const char *s = (const char *)(uintptr_t)omprpc_read_arg_(w, here, 8);
    *bytes = s;
    if (!s) {
      *count = ~(uint64_t)0;
    } else if (spec.want == OMPRPC_WANT_STR) {
      uint64_t n = 0;
      while ((precision < 0 || n < (uint64_t)precision) && s[n])
        ++n;
      *count = n;
    } else {
      const uint32_t *units = (const uint32_t *)s;
      uint64_t n = 0;
      while ((precision < 0 || n < (uint64_t)precision) && units[n])
        ++n;
      *count = n * 4;
    }
    return 1;
  }
  return 0;
}

/* The request as a stream of pieces. */
typedef struct {
  omprpc_strings_ strings;
  uint64_t head[2];
  uint64_t format_len;
  const char *format;
  const char *string; /* the bytes of the string being sent */
  uint64_t count;     /* their count, sent before them */
  const char *piece;
  uint64_t left;
  int stage;
} omprpc_request_;

/* Moves to the next piece; 0 at the end of the request. */
static inline int omprpc_request_next_(omprpc_request_ *r) {
  const char *bytes;
  switch (r->stage) {
  case 0:
    r->stage = 1, r->piece = r->format, r->left = r->format_len;
    return 1;
  case 1:
    r->stage = 2, r->piece = r->strings.args, r->left = r->strings.args_len;
    return 1;
  case 2:
  case 4:
    if (!omprpc_next_string_(&r->strings, &bytes, &r->count))
      return 0;
    r->stage = 3, r->piece = (const char *)&r->count, r->left = 8;
    r->string = bytes;
    return 1;
  default:
    r->stage = 4, r->piece = r->string, r->left = r->count == ~(uint64_t)0 ? 0 : r->count;
    return 1;
  }
}

/* Copies the request's next `n` bytes to `dst` (zeros past its end). */
static inline void omprpc_request_take_(omprpc_request_ *r, char *dst, uint64_t n) {
  while (n) {
    if (!r->left) {
      if (!omprpc_request_next_(r)) {
        for (; n; --n)
          *dst++ = 0;
        return;
      }
      continue;
    }
    uint64_t k = n < r->left ? n : r->left;
    omprpc_copy_(dst, r->piece, k);
    dst += k, r->piece += k, r->left -= k, n -= k;
  }
}

/* Starts a request for `format` and `args`; returns its size in bytes. The strings are walked once
 * here for their sizes, which the first packet carries, and once more as they are sent. */
static inline uint64_t omprpc_request_start_(omprpc_request_ *r, omprpc_file *f, const char *format,
                                             const void *args, uint64_t args_len) {
  r->format = format;
  r->format_len = omprpc_strlen_(format) + 1;
  r->strings.scan = format;
  r->strings.args = (const char *)args;
  r->strings.args_len = args_len;
  r->strings.at = 0;
  r->head[0] = (uint64_t)(uintptr_t)f;
  r->head[1] = r->format_len | (args_len << 32);
  r->piece = (const char *)r->head;
  r->left = sizeof r->head;
  r->stage = 0;
  omprpc_strings_ walk = r->strings;
  uint64_t size = sizeof r->head + r->format_len + args_len;
  const char *bytes;
  uint64_t count;
  while (omprpc_next_string_(&walk, &bytes, &count))
    size += 8 + (count == ~(uint64_t)0 ? 0 : count);
  return size;
}

/* Sends a started request of `size` bytes through `port`, as omprpc_send_n sends a byte string. */
static inline void omprpc_request_send_(omprpc_client_port *port, omprpc_request_ *request, uint64_t size) {
  omprpc_packet packet;
  packet.data[0] = size;
  omprpc_request_take_(request, (char *)&packet.data[1], 56);
  omprpc_send(port, &packet);
  for (uint64_t idx = 56; omprpc_ballot_(port->mask, idx < size); idx += 64) {
    if (idx < size)
      omprpc_request_take_(request, (char *)packet.data, 64);
    omprpc_send(port, &packet);
  }
}

/* printf to `f` of `format` with `args`, an argument struct of `args_len` bytes laid out as clang lays
 * out __llvm_omp_vprintf's; the host's count, or -1. */
static inline int omprpc_vprintf_struct_(omprpc_file *f, const char *format, const void *args, uint64_t args_len) {
  if (!format || !omprpc_writable_(f) || !omprpc_rpc_active())
    return -1;
  omprpc_request_ request;
  uint64_t size = omprpc_request_start_(&request, f, format, args, args_len);
  omprpc_packet packet;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_PRINTF);
  omprpc_request_send_(&port, &request, size);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (int)(int64_t)packet.data[0];
}

/* snprintf into `buffer` (`size` bytes; OMPRPC_NO_SIZE for sprintf, which has none) of `format` with
 * `args`, an argument struct as for omprpc_vprintf_struct_. The same request goes to the host, with the
 * size in place of the stream; the host formats it with its C library's vsnprintf and replies with the
 * result (the full length, or -1), then the bytes glibc's snprintf writes (at most `size`, NUL
 * included), which land in `buffer` (src/rpc/services/printf.rs). A NULL buffer with a size, or a NULL
 * format, is refused with -1, as are the host's refusals (%n, positions, an output over 1 MiB), which
 * leave the buffer as it was. */
#define OMPRPC_NO_SIZE (~(uint64_t)0)
/* The most bytes, NUL included, one call writes to a buffer (the host's FORMAT_TO_BUFFER_LIMIT). */
#define OMPRPC_FORMAT_TO_BUFFER_LIMIT ((uint64_t)1 << 20)
static inline int omprpc_vsnprintf_struct_(char *buffer, uint64_t size, const char *format, const void *args,
                                           uint64_t args_len) {
  if (!format || (!buffer && size) || !omprpc_rpc_active())
    return -1;
  omprpc_request_ request;
  uint64_t total = omprpc_request_start_(&request, OMPRPC_STDOUT, format, args, args_len);
  request.head[0] = size;
  omprpc_packet packet;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_FORMAT_TO_BUFFER);
  omprpc_request_send_(&port, &request, total);
  omprpc_recv(&port, &packet);
  omprpc_recv_n(&port, buffer, size);
  omprpc_close(&port);
  return (int)(int64_t)packet.data[0];
}

#if !OMPRPC_GPU_
/* Without a server, on the host: print each conversion with the host's own printf, holding the
 * stream's lock for the whole call, so that the call is one write to other threads (stdio's own calls
 * inside take the lock recursively), as a printf is. */
static inline int omprpc_host_printf_locked_(FILE *stream, const char *format, const omprpc_arg *args,
                                             uint32_t count);
static inline int omprpc_host_printf_(FILE *stream, const char *format, const omprpc_arg *args, uint32_t count) {
  flockfile(stream);
  int written = omprpc_host_printf_locked_(stream, format, args, count);
  funlockfile(stream);
  return written;
}
static inline int omprpc_host_printf_locked_(FILE *stream, const char *format, const omprpc_arg *args,
                                             uint32_t count) {
  omprpc_spec_ spec;
  int total = 0;
  uint32_t next = 0;
  const omprpc_arg none = omprpc_arg_i_(0);
  const char *p = format;
  while (omprpc_next_spec_(p, &spec)) {
    for (const char *q = p; q < spec.start; ++q)
      if (*q == '%' && q[1] == '%')
        fputc('%', stream), ++q, ++total;
      else
        fputc(*q, stream), ++total;
    char one[64];
    size_t len = (size_t)(spec.end - spec.start);
    if (len >= sizeof one)
      return -1;
    memcpy(one, spec.start, len);
    one[len] = 0;
    int stars[2] = {0, 0};
    for (int star = 0; star < spec.star_width + spec.star_precision; ++star)
      stars[star] = (int)omprpc_as_long_(next < count ? &args[next++] : &none);
    const omprpc_arg *a = spec.want == OMPRPC_WANT_NONE ? &none : next < count ? &args[next++] : &none;
    int n = 0, nstars = spec.star_width + spec.star_precision;
#define OMPRPC_PRINT_ONE_(value)                                                                          \
  (nstars == 2   ? fprintf(stream, one, stars[0], stars[1], value)                                        \
   : nstars == 1 ? fprintf(stream, one, stars[0], value)                                                  \
                 : fprintf(stream, one, value))
    switch (spec.want) {
    case OMPRPC_WANT_INT:
      n = OMPRPC_PRINT_ONE_((int)omprpc_as_long_(a));
      break;
    case OMPRPC_WANT_LONG:
      n = OMPRPC_PRINT_ONE_(omprpc_as_long_(a));
      break;
    case OMPRPC_WANT_DOUBLE:
      n = OMPRPC_PRINT_ONE_(omprpc_as_double_(a));
      break;
    case OMPRPC_WANT_LDOUBLE:
      n = OMPRPC_PRINT_ONE_(a->kind == OMPRPC_ARG_LDOUBLE ? omprpc_arg_ldouble_(a) : (long double)omprpc_as_double_(a));
      break;
    case OMPRPC_WANT_PTR:
    case OMPRPC_WANT_STR:
    case OMPRPC_WANT_WSTR:
      n = OMPRPC_PRINT_ONE_(a->v.p);
      break;
    case OMPRPC_WANT_REFUSED:
      return -1;
    default:
      n = fputs(one, stream) < 0 ? -1 : (int)len;
      break;
    }
#undef OMPRPC_PRINT_ONE_
    if (n < 0)
      return -1;
    total += n;
    p = spec.end;
  }
  for (; *p; ++p) {
    if (*p == '%' && p[1] == '%')
      ++p;
    fputc(*p, stream);
    ++total;
  }
  return total;
}
#endif

/* An argument struct as clang lays it out for __llvm_omp_vprintf: in the caller's `small` buffer when
 * it fits, else in a block of the heap, which omprpc_unpack_ gives back. */
typedef struct {
  char *bytes;
  uint64_t size;
} omprpc_packed_;

static inline int omprpc_pack_into_(omprpc_packed_ *packed, char *small, uint64_t small_size, const char *format,
                                    const omprpc_arg *args, uint32_t count) {
  packed->size = omprpc_pack_(format, args, count, small, small_size);
  packed->bytes = small;
  if (packed->size > small_size) {
    packed->bytes = (char *)omprpc_malloc(packed->size);
    if (!packed->bytes)
      return -1;
    omprpc_pack_(format, args, count, packed->bytes, packed->size);
  }
  return 0;
}

static inline void omprpc_unpack_(omprpc_packed_ *packed, const char *small) {
  if (packed->bytes != small)
    omprpc_free(packed->bytes);
}

/* printf to `f` of `args[0]` (the format) with `args[1..count)`. */
static inline int omprpc_format_args_(omprpc_file *f, const omprpc_arg *args, uint32_t count) {
  const char *format = (const char *)args[0].v.p;
  ++args;
  --count;
  if (!omprpc_writable_(f))
    return -1;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return omprpc_host_printf_(omprpc_host_stream_(f), format, args, count);
  char small[256];
#else
  if (!omprpc_rpc_active())
    return -1;
  char small[128]; /* GPU stacks are small */
#endif
  omprpc_packed_ packed;
  if (omprpc_pack_into_(&packed, small, sizeof small, format, args, count) != 0)
    return -1;
  int result = omprpc_vprintf_struct_(f, format, packed.bytes, packed.size);
  omprpc_unpack_(&packed, small);
  return result;
}

#if !OMPRPC_GPU_
/* snprintf without a server, on the host: printed as omprpc_host_printf_ prints, into a memory stream,
 * then cut to the buffer's size as snprintf cuts (after an error, what was printed before it, as glibc
 * keeps it). A refused format (%n, positions) writes nothing, and the host's limit on what a call writes
 * (OMPRPC_FORMAT_TO_BUFFER_LIMIT) holds here too, so that a program behaves alike with a server. */
static inline int omprpc_host_snprintf_(char *buffer, uint64_t size, const char *format, const omprpc_arg *args,
                                        uint32_t count) {
  omprpc_spec_ spec;
  for (const char *p = format; omprpc_next_spec_(p, &spec); p = spec.end)
    if (spec.want == OMPRPC_WANT_REFUSED)
      return -1;
  char *text = 0;
  size_t length = 0;
  FILE *stream = open_memstream(&text, &length);
  if (!stream)
    return -1;
  int result = omprpc_host_printf_(stream, format, args, count);
  if (fclose(stream) != 0) {
    free(text);
    return -1;
  }
  uint64_t kept = size ? ((uint64_t)length < size - 1 ? (uint64_t)length : size - 1) : 0;
  if (size && kept + 1 > OMPRPC_FORMAT_TO_BUFFER_LIMIT) {
    result = -1;
  } else if (size) {
    memcpy(buffer, text, kept);
    buffer[kept] = 0;
  }
  free(text);
  return result;
}
#endif

/* snprintf into `buffer` of `size` bytes (OMPRPC_NO_SIZE: sprintf) of `args[0]` (the format) with
 * `args[1..count)`. */
static inline int omprpc_format_to_buffer_(char *buffer, uint64_t size, const omprpc_arg *args, uint32_t count) {
  const char *format = (const char *)args[0].v.p;
  ++args;
  --count;
  if (!format || (!buffer && size))
    return -1;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return omprpc_host_snprintf_(buffer, size, format, args, count);
  char small[256];
#else
  if (!omprpc_rpc_active())
    return -1;
  char small[128]; /* GPU stacks are small */
#endif
  omprpc_packed_ packed;
  if (omprpc_pack_into_(&packed, small, sizeof small, format, args, count) != 0)
    return -1;
  int result = omprpc_vsnprintf_struct_(buffer, size, format, packed.bytes, packed.size);
  omprpc_unpack_(&packed, small);
  return result;
}

/* asprintf of `args[0]` (the format) with `args[1..count)`: the text in a block of `allocate(length + 1)`
 * bytes (omprpc_malloc, or a library's malloc, whose `release` frees it), at `*out`; its length, or -1
 * with `*out` left as it was (as glibc leaves it). A short text costs one call: formatted into a small
 * buffer first, then copied; a longer one is formatted again into its block. */
static inline int omprpc_asprintf_with_(char **out, void *(*allocate)(size_t), void (*release)(void *),
                                        const omprpc_arg *args, uint32_t count) {
  char small[64];
  int length = omprpc_format_to_buffer_(small, sizeof small, args, count);
  if (length < 0)
    return -1;
  char *text = (char *)allocate((size_t)length + 1);
  if (!text)
    return -1;
  if ((uint64_t)length < sizeof small) {
    omprpc_copy_(text, small, (uint64_t)length + 1);
  } else if (omprpc_format_to_buffer_(text, (uint64_t)length + 1, args, count) != length) {
    release(text); /* the host's output changed in between (%m reads its errno) */
    return -1;
  }
  *out = text;
  return length;
}
static inline int omprpc_asprintf_args_(char **out, const omprpc_arg *args, uint32_t count) {
  return omprpc_asprintf_with_(out, omprpc_malloc, omprpc_free, args, count);
}

/* ---- scanf ---------------------------------------------------------------------------------------------
 * sscanf of a string, fscanf of a stream (scanf: of OMPRPC_STDIN), parsed by the host's C library: the
 * request (OMPRPC_OP_SCAN) is a packet (word 0: OMPRPC_SCAN_STRING or OMPRPC_SCAN_STREAM; word 1: the
 * stream; word 2: how many pointers), the format with its NUL, and the input string without it. The
 * host reads the destination types from the format, calls glibc's vsscanf or vfscanf, and replies with
 * its result (EOF, -1, when it refuses: positions, %ms, wide conversions, more conversions than
 * pointers, an fscanf width of 65536 or more), then, for each conversion glibc stored, a u32 pointer
 * index, a u32 byte count and the bytes, which land through that pointer as they arrive (no buffer on
 * the device's stack). fscanf's %s and %[ without a width read at most 65535 bytes. A NULL string,
 * stream or format gives EOF without a request. */
enum { OMPRPC_SCAN_STRING = 0, OMPRPC_SCAN_STREAM = 1 };

/* Where the bytes of a reply go: record heads are gathered, then their bytes copied to the pointer. */
typedef struct {
  const void *const *pointers; /* args + 1 */
  uint32_t count;
  uint32_t head_len;
  unsigned char head[8];
  unsigned char *dst;
  uint64_t left;
} omprpc_scan_sink_;

static inline void omprpc_scan_take_(omprpc_scan_sink_ *s, const unsigned char *bytes, uint64_t n) {
  while (n) {
    if (s->left) {
      uint64_t k = n < s->left ? n : s->left;
      if (s->dst) {
        omprpc_copy_(s->dst, bytes, k);
        s->dst += k;
      }
      bytes += k, n -= k, s->left -= k;
      continue;
    }
    s->head[s->head_len++] = *bytes++;
    --n;
    if (s->head_len == sizeof s->head) {
      uint32_t index, length;
      omprpc_copy_(&index, s->head, 4);
      omprpc_copy_(&length, s->head + 4, 4);
      s->head_len = 0;
      s->left = length;
      s->dst = index < s->count ? (unsigned char *)(uintptr_t)s->pointers[index] : 0;
    }
  }
}

/* Receives a byte string as omprpc_recv_n does, into the sink. */
static inline void omprpc_scan_recv_(omprpc_client_port *p, omprpc_scan_sink_ *sink) {
  omprpc_packet packet;
  omprpc_recv(p, &packet);
  uint64_t size = packet.data[0];
  omprpc_scan_take_(sink, (const unsigned char *)&packet.data[1], size < 56 ? size : 56);
  for (uint64_t idx = 56; omprpc_ballot_(p->mask, idx < size); idx += 64) {
    omprpc_recv(p, &packet);
    omprpc_scan_take_(sink, (const unsigned char *)packet.data, size > idx ? (size - idx < 64 ? size - idx : 64) : 0);
  }
}

#if !OMPRPC_GPU_
/* Without a server, on the host: the host's own sscanf or fscanf with the pointers (unused ones are
 * passed as C allows, and ignored). */
static inline int omprpc_host_scan_(int kind, const void *source, const void *const *args, uint32_t count) {
  void *p[31] = {0};
  for (uint32_t i = 1; i < count && i <= 31; ++i)
    p[i - 1] = (void *)(uintptr_t)args[i];
  const char *format = (const char *)args[0];
#define OMPRPC_SCAN_ALL_                                                                                 \
  p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15], \
      p[16], p[17], p[18], p[19], p[20], p[21], p[22], p[23], p[24], p[25], p[26], p[27], p[28], p[29], p[30]
  int result = kind == OMPRPC_SCAN_STRING ? sscanf((const char *)source, format, OMPRPC_SCAN_ALL_)
                                          : fscanf(omprpc_host_stream_((omprpc_file *)(uintptr_t)source), format,
                                                   OMPRPC_SCAN_ALL_);
#undef OMPRPC_SCAN_ALL_
  return result;
}
#endif

/* sscanf (OMPRPC_SCAN_STRING: `source` is the string) or fscanf (OMPRPC_SCAN_STREAM: an omprpc_file *)
 * of `args[0]` (the format) into the pointers `args[1..count)`; glibc's result, or EOF (-1). */
static inline int omprpc_scan_args_(int kind, const void *source, const void *const *args, uint32_t count) {
  const char *format = (const char *)args[0];
  if (!format || !source || !count)
    return -1;
#if !OMPRPC_GPU_
  if (!omprpc_rpc_active())
    return count <= 32 ? omprpc_host_scan_(kind, source, args, count) : -1;
#else
  if (!omprpc_rpc_active())
    return -1;
#endif
  const char *input = kind == OMPRPC_SCAN_STRING ? (const char *)source : "";
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = (uint64_t)kind;
  packet.data[1] = kind == OMPRPC_SCAN_STRING ? 0 : (uint64_t)(uintptr_t)source;
  packet.data[2] = count - 1;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_SCAN);
  omprpc_send(&port, &packet);
  omprpc_send_n(&port, format, omprpc_strlen_(format) + 1);
  omprpc_send_n(&port, input, omprpc_strlen_(input));
  omprpc_recv(&port, &packet);
  omprpc_scan_sink_ sink;
  sink.pointers = args + 1;
  sink.count = count - 1;
  sink.head_len = 0;
  sink.dst = 0;
  sink.left = 0;
  omprpc_scan_recv_(&port, &sink);
  omprpc_close(&port);
  return (int)(int64_t)packet.data[0];
}

#if !OMPRPC_GPU_
/* printf with a va_list, for code that only runs on the host device. */
static inline int omprpc_vfprintf(omprpc_file *f, const char *format, va_list ap) {
  uint32_t count = 1;
  omprpc_spec_ spec;
  for (const char *p = format; omprpc_next_spec_(p, &spec); p = spec.end)
    count += (uint32_t)(spec.star_width + spec.star_precision + (spec.want != OMPRPC_WANT_NONE));
  omprpc_arg small[32];
  omprpc_arg *args = count <= 32 ? small : (omprpc_arg *)malloc(count * sizeof *args);
  if (!args)
    return -1;
  args[0] = omprpc_arg_p_(format);
  uint32_t n = 1;
  for (const char *p = format; omprpc_next_spec_(p, &spec); p = spec.end) {
    for (int star = 0; star < spec.star_width + spec.star_precision; ++star)
      args[n++] = omprpc_arg_i_(va_arg(ap, int));
    switch (spec.want) {
    case OMPRPC_WANT_INT:
      args[n++] = omprpc_arg_i_(va_arg(ap, int));
      break;
    case OMPRPC_WANT_LONG:
      args[n++] = omprpc_arg_i_(va_arg(ap, long long));
      break;
    case OMPRPC_WANT_DOUBLE:
      args[n++] = omprpc_arg_d_(va_arg(ap, double));
      break;
    case OMPRPC_WANT_LDOUBLE:
      args[n++] = omprpc_arg_ld_(va_arg(ap, long double));
      break;
    case OMPRPC_WANT_PTR:
    case OMPRPC_WANT_STR:
    case OMPRPC_WANT_WSTR:
      args[n++] = omprpc_arg_p_(va_arg(ap, void *));
      break;
    default:
      break;
    }
  }
  int result = omprpc_format_args_(f, args, n);
  if (args != small)
    free(args);
  return result;
}
#endif

#pragma omp end declare target

#ifdef __cplusplus
} /* extern "C" */
#endif

/* printf and fprintf: C records each argument's type with _Generic, C++ with overloads. */
#ifndef __cplusplus

#if OMPRPC_GPU_
#define OMPRPC_LDOUBLE_ARG_
#else
#define OMPRPC_LDOUBLE_ARG_ long double : omprpc_arg_ld_,
#endif
#define OMPRPC_ARG_(x)                                                                                    \
  _Generic((x), _Bool: omprpc_arg_i_, char: omprpc_arg_i_, signed char: omprpc_arg_i_,                   \
           unsigned char: omprpc_arg_u_, short: omprpc_arg_i_, unsigned short: omprpc_arg_u_,            \
           int: omprpc_arg_i_, unsigned int: omprpc_arg_u_, long: omprpc_arg_i_,                          \
           unsigned long: omprpc_arg_u_, long long: omprpc_arg_i_, unsigned long long: omprpc_arg_u_,     \
           float: omprpc_arg_d_, double: omprpc_arg_d_, OMPRPC_LDOUBLE_ARG_ default: omprpc_arg_p_)(x)

/* Argument counting and mapping for up to 32 arguments (the format included); 33 to 40 count as
 * TOO_MANY, which stops the build with a message that names the limit. */
#define OMPRPC_COUNT_(...)                                                                                \
  OMPRPC_COUNT_N_(__VA_ARGS__, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY,      \
                  TOO_MANY, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,   \
                  12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define OMPRPC_COUNT_N_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, \
                        a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, \
                        a37, a38, a39, a40, n, ...)                                                          \
  n
#define OMPRPC_CAT_(a, b) OMPRPC_CAT2_(a, b)
#define OMPRPC_CAT2_(a, b) a##b
#define OMPRPC_MAP_(...) OMPRPC_CAT_(OMPRPC_MAP_, OMPRPC_COUNT_(__VA_ARGS__))(__VA_ARGS__)
#define OMPRPC_MAP_1(a) OMPRPC_ARG_(a)
#define OMPRPC_MAP_2(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_1(__VA_ARGS__)
#define OMPRPC_MAP_3(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_2(__VA_ARGS__)
#define OMPRPC_MAP_4(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_3(__VA_ARGS__)
#define OMPRPC_MAP_5(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_4(__VA_ARGS__)
#define OMPRPC_MAP_6(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_5(__VA_ARGS__)
#define OMPRPC_MAP_7(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_6(__VA_ARGS__)
#define OMPRPC_MAP_8(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_7(__VA_ARGS__)
#define OMPRPC_MAP_9(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_8(__VA_ARGS__)
#define OMPRPC_MAP_10(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_9(__VA_ARGS__)
#define OMPRPC_MAP_11(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_10(__VA_ARGS__)
#define OMPRPC_MAP_12(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_11(__VA_ARGS__)
#define OMPRPC_MAP_13(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_12(__VA_ARGS__)
#define OMPRPC_MAP_14(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_13(__VA_ARGS__)
#define OMPRPC_MAP_15(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_14(__VA_ARGS__)
#define OMPRPC_MAP_16(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_15(__VA_ARGS__)
#define OMPRPC_MAP_17(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_16(__VA_ARGS__)
#define OMPRPC_MAP_18(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_17(__VA_ARGS__)
#define OMPRPC_MAP_19(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_18(__VA_ARGS__)
#define OMPRPC_MAP_20(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_19(__VA_ARGS__)
#define OMPRPC_MAP_21(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_20(__VA_ARGS__)
#define OMPRPC_MAP_22(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_21(__VA_ARGS__)
#define OMPRPC_MAP_23(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_22(__VA_ARGS__)
#define OMPRPC_MAP_24(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_23(__VA_ARGS__)
#define OMPRPC_MAP_25(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_24(__VA_ARGS__)
#define OMPRPC_MAP_26(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_25(__VA_ARGS__)
#define OMPRPC_MAP_27(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_26(__VA_ARGS__)
#define OMPRPC_MAP_28(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_27(__VA_ARGS__)
#define OMPRPC_MAP_29(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_28(__VA_ARGS__)
#define OMPRPC_MAP_30(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_29(__VA_ARGS__)
#define OMPRPC_MAP_31(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_30(__VA_ARGS__)
#define OMPRPC_MAP_32(a, ...) OMPRPC_ARG_(a), OMPRPC_MAP_31(__VA_ARGS__)
#define OMPRPC_MAP_TOO_MANY(...)                                                                          \
  __extension__({                                                                                         \
    _Static_assert(0, "omprpc_printf and omprpc_fprintf take at most 31 arguments after the format");    \
    omprpc_arg_i_(0);                                                                                     \
  })
#define OMPRPC_COUNTED_TOO_MANY 0

#define OMPRPC_FORMAT_(stream, ...)                                                                       \
  omprpc_format_args_((stream), (const omprpc_arg[]){OMPRPC_MAP_(__VA_ARGS__)},                          \
                      (uint32_t)OMPRPC_CAT_(OMPRPC_COUNTED_, OMPRPC_COUNT_(__VA_ARGS__)))
#define OMPRPC_COUNTED_0 0
#define OMPRPC_COUNTED_1 1
#define OMPRPC_COUNTED_2 2
#define OMPRPC_COUNTED_3 3
#define OMPRPC_COUNTED_4 4
#define OMPRPC_COUNTED_5 5
#define OMPRPC_COUNTED_6 6
#define OMPRPC_COUNTED_7 7
#define OMPRPC_COUNTED_8 8
#define OMPRPC_COUNTED_9 9
#define OMPRPC_COUNTED_10 10
#define OMPRPC_COUNTED_11 11
#define OMPRPC_COUNTED_12 12
#define OMPRPC_COUNTED_13 13
#define OMPRPC_COUNTED_14 14
#define OMPRPC_COUNTED_15 15
#define OMPRPC_COUNTED_16 16
#define OMPRPC_COUNTED_17 17
#define OMPRPC_COUNTED_18 18
#define OMPRPC_COUNTED_19 19
#define OMPRPC_COUNTED_20 20
#define OMPRPC_COUNTED_21 21
#define OMPRPC_COUNTED_22 22
#define OMPRPC_COUNTED_23 23
#define OMPRPC_COUNTED_24 24
#define OMPRPC_COUNTED_25 25
#define OMPRPC_COUNTED_26 26
#define OMPRPC_COUNTED_27 27
#define OMPRPC_COUNTED_28 28
#define OMPRPC_COUNTED_29 29
#define OMPRPC_COUNTED_30 30
#define OMPRPC_COUNTED_31 31
#define OMPRPC_COUNTED_32 32

/* omprpc_printf(format, ...) and omprpc_fprintf(stream, format, ...): at most 31 arguments. */
#define omprpc_printf(...) OMPRPC_FORMAT_(OMPRPC_STDOUT, __VA_ARGS__)
#define omprpc_fprintf(stream, ...) OMPRPC_FORMAT_(stream, __VA_ARGS__)

/* The typed arguments of an snprintf-family call (the format first), or, past 31 after the format, a
 * build error that names these calls: OMPRPC_FITS_ reads FITS or TOO_MANY where OMPRPC_COUNT_ reads
 * the count. */
#define OMPRPC_FITS_(...)                                                                                 \
  OMPRPC_COUNT_N_(__VA_ARGS__, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY, TOO_MANY,      \
                  TOO_MANY, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS,    \
                  FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS, FITS,  \
                  FITS, FITS, FITS)
#define OMPRPC_TO_BUFFER_ARGS_(...) OMPRPC_CAT_(OMPRPC_TO_BUFFER_ARGS_, OMPRPC_FITS_(__VA_ARGS__))(__VA_ARGS__)
#define OMPRPC_TO_BUFFER_ARGS_FITS(...) OMPRPC_MAP_(__VA_ARGS__)
#define OMPRPC_TO_BUFFER_ARGS_TOO_MANY(...)                                                               \
  __extension__({                                                                                         \
    _Static_assert(0, "omprpc_snprintf, omprpc_sprintf and omprpc_asprintf (snprintf, sprintf and "      \
                      "asprintf on a GPU with omprpc_libc.h) take at most 31 arguments after the format"); \
    omprpc_arg_i_(0);                                                                                     \
  })
#define OMPRPC_TO_BUFFER_COUNT_(...) (uint32_t)OMPRPC_CAT_(OMPRPC_COUNTED_, OMPRPC_COUNT_(__VA_ARGS__))
#define OMPRPC_TO_BUFFER_(buffer, size, ...)                                                              \
  omprpc_format_to_buffer_((buffer), (size), (const omprpc_arg[]){OMPRPC_TO_BUFFER_ARGS_(__VA_ARGS__)},   \
                           OMPRPC_TO_BUFFER_COUNT_(__VA_ARGS__))

/* omprpc_snprintf(buffer, size, format, ...), omprpc_sprintf(buffer, format, ...) and
 * omprpc_asprintf(&text, format, ...): C's snprintf, sprintf and GNU's asprintf, formatted by the host's
 * C library (the same text and result), at most 31 arguments. sprintf, which has no size, writes the
 * whole text and its NUL; asprintf's text comes from omprpc_malloc (free it with omprpc_free). */
#define omprpc_snprintf(buffer, size, ...) OMPRPC_TO_BUFFER_(buffer, (uint64_t)(size), __VA_ARGS__)
#define omprpc_sprintf(buffer, ...) OMPRPC_TO_BUFFER_(buffer, OMPRPC_NO_SIZE, __VA_ARGS__)
#define omprpc_asprintf(out, ...)                                                                         \
  omprpc_asprintf_args_((out), (const omprpc_arg[]){OMPRPC_TO_BUFFER_ARGS_(__VA_ARGS__)},                 \
                        OMPRPC_TO_BUFFER_COUNT_(__VA_ARGS__))

/* The pointers of a scanf-family call (the format first), or, past 31 after the format, a build error
 * that names these calls. */
#define OMPRPC_SCAN_ARGS_(...) OMPRPC_CAT_(OMPRPC_SCAN_ARGS_, OMPRPC_FITS_(__VA_ARGS__))(__VA_ARGS__)
#define OMPRPC_SCAN_ARGS_FITS(...) __VA_ARGS__
#define OMPRPC_SCAN_ARGS_TOO_MANY(...)                                                                    \
  __extension__({                                                                                         \
    _Static_assert(0, "omprpc_sscanf, omprpc_fscanf and omprpc_scanf (sscanf, fscanf and scanf on a GPU " \
                      "with omprpc_libc.h) take at most 31 arguments after the format");                  \
    (const void *)0;                                                                                      \
  })
#define OMPRPC_SCAN_(kind, source, ...)                                                                   \
  omprpc_scan_args_((kind), (source), (const void *const[]){OMPRPC_SCAN_ARGS_(__VA_ARGS__)},              \
                    OMPRPC_TO_BUFFER_COUNT_(__VA_ARGS__))

/* omprpc_sscanf(string, format, ...), omprpc_fscanf(stream, format, ...) and omprpc_scanf(format, ...):
 * C's sscanf, fscanf and scanf (of OMPRPC_STDIN), parsed by the host's C library (the same result and
 * stored values), at most 31 pointers; see omprpc_scan_args_ for what is refused. */
#define omprpc_sscanf(string, ...) OMPRPC_SCAN_(OMPRPC_SCAN_STRING, (const void *)(string), __VA_ARGS__)
#define omprpc_fscanf(stream, ...) OMPRPC_SCAN_(OMPRPC_SCAN_STREAM, (const void *)(stream), __VA_ARGS__)
#define omprpc_scanf(...) OMPRPC_SCAN_(OMPRPC_SCAN_STREAM, (const void *)OMPRPC_STDIN, __VA_ARGS__)

#else /* C++ */

#pragma omp begin declare target
static inline omprpc_arg omprpc_make_arg(bool v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(char v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(signed char v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(unsigned char v) { return omprpc_arg_u_(v); }
static inline omprpc_arg omprpc_make_arg(short v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(unsigned short v) { return omprpc_arg_u_(v); }
static inline omprpc_arg omprpc_make_arg(int v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(unsigned v) { return omprpc_arg_u_(v); }
static inline omprpc_arg omprpc_make_arg(long v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(unsigned long v) { return omprpc_arg_u_(v); }
static inline omprpc_arg omprpc_make_arg(long long v) { return omprpc_arg_i_(v); }
static inline omprpc_arg omprpc_make_arg(unsigned long long v) { return omprpc_arg_u_(v); }
static inline omprpc_arg omprpc_make_arg(float v) { return omprpc_arg_d_(v); }
static inline omprpc_arg omprpc_make_arg(double v) { return omprpc_arg_d_(v); }
#if !OMPRPC_GPU_
static inline omprpc_arg omprpc_make_arg(long double v) { return omprpc_arg_ld_(v); }
#endif
template <typename T> static inline omprpc_arg omprpc_make_arg(T *v) { return omprpc_arg_p_((const void *)v); }

/* omprpc_printf(format, ...) and omprpc_fprintf(stream, format, ...). */
template <typename... A> static inline int omprpc_fprintf(omprpc_file *stream, const char *format, A... args) {
  const omprpc_arg list[] = {omprpc_arg_p_(format), omprpc_make_arg(args)...};
  return omprpc_format_args_(stream, list, (uint32_t)(1 + sizeof...(A)));
}
template <typename... A> static inline int omprpc_printf(const char *format, A... args) {
  return omprpc_fprintf(OMPRPC_STDOUT, format, args...);
}

/* omprpc_snprintf, omprpc_sprintf and omprpc_asprintf (see the C forms above). */
template <typename... A>
static inline int omprpc_snprintf(char *buffer, size_t size, const char *format, A... args) {
  const omprpc_arg list[] = {omprpc_arg_p_(format), omprpc_make_arg(args)...};
  return omprpc_format_to_buffer_(buffer, size, list, (uint32_t)(1 + sizeof...(A)));
}
template <typename... A> static inline int omprpc_sprintf(char *buffer, const char *format, A... args) {
  const omprpc_arg list[] = {omprpc_arg_p_(format), omprpc_make_arg(args)...};
  return omprpc_format_to_buffer_(buffer, OMPRPC_NO_SIZE, list, (uint32_t)(1 + sizeof...(A)));
}
template <typename... A> static inline int omprpc_asprintf(char **out, const char *format, A... args) {
  const omprpc_arg list[] = {omprpc_arg_p_(format), omprpc_make_arg(args)...};
  return omprpc_asprintf_args_(out, list, (uint32_t)(1 + sizeof...(A)));
}

/* omprpc_sscanf, omprpc_fscanf and omprpc_scanf (see the C forms above): every argument a pointer. */
template <typename... A> static inline int omprpc_sscanf(const char *string, const char *format, A *...args) {
  const void *const list[] = {format, (const void *)args...};
  return omprpc_scan_args_(OMPRPC_SCAN_STRING, string, list, (uint32_t)(1 + sizeof...(A)));
}
template <typename... A> static inline int omprpc_fscanf(omprpc_file *stream, const char *format, A *...args) {
  const void *const list[] = {format, (const void *)args...};
  return omprpc_scan_args_(OMPRPC_SCAN_STREAM, stream, list, (uint32_t)(1 + sizeof...(A)));
}
template <typename... A> static inline int omprpc_scanf(const char *format, A *...args) {
  return omprpc_fscanf(OMPRPC_STDIN, format, args...);
}
#pragma omp end declare target

#endif /* __cplusplus */

#endif /* OMPRPC_DEVICE_H */
