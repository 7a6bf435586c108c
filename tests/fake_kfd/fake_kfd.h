/*
 * Test hooks of the fake kernel driver thunk (tests/fake_kfd/fake_hsakmt.c).
 *
 * The fake is a replacement libhsakmt.so.1 under which the real AMD HSA runtime (ROCr) runs on a
 * machine without a GPU. These functions are exported unversioned next to the thunk's own
 * (HSAKMT_1) functions; a test that loaded the runtime with dlopen finds them with
 * dlopen("libhsakmt.so.1", RTLD_NOW | RTLD_NOLOAD) and dlsym.
 */
#ifndef FAKE_KFD_H
#define FAKE_KFD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A host function standing in for a device kernel. It runs on the fake command processor's thread
 * (one thread per queue) once per dispatch packet, not once per work-item: `packet` is the
 * 64-byte hsa_kernel_dispatch_packet_t in the queue, `kernarg` the host address of its
 * kernarg_address. It returns 0, or the error bits of a fault (0x80000000: a trap, which ROCr
 * reports to the queue's callback as HSA_STATUS_ERROR_EXCEPTION); a faulting dispatch does not
 * complete, and its queue runs nothing more. */
typedef int64_t (*fake_kfd_kernel_body)(void *ctx, const void *packet, const void *kernarg);

/* Registers `body` for dispatches whose kernel_object is `kernel_object` (as returned by
 * hsa_executable_symbol_get_info(..., HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, ...)).
 * A NULL body removes the registration. Returns 0, or -1 when the table is full. */
int fake_kfd_set_kernel(uint64_t kernel_object, fake_kfd_kernel_body body, void *ctx);

/* Number of dispatches of kernels that are neither registered nor ROCr's own blit kernels; such
 * dispatches run nothing and complete at once. */
uint64_t fake_kfd_dispatches(void);

/* Number of ROCr blit-kernel dispatches (copies and fills) the fake carried out on the host. */
uint64_t fake_kfd_blits(void);

/* The next call of the thunk function with this name (e.g. "hsaKmtAllocMemory") returns
 * HSAKMT_STATUS_ERROR. Several names may be armed at once; each fires once. */
void fake_kfd_fail_next(const char *thunk_function_name);

/* Chooses the GPUs the next hsaKmtOpenKFD presents (overriding FAKE_KFD_GPU, FAKE_KFD_GPUS and
 * FAKE_KFD_DISTINCT_GPU_ADDRESSES): `gpus` GPUs (1 to 8) of model `gpu` ("gfx90a" or "gfx1030";
 * NULL keeps the model). Returns 0, or -1 while the driver is open or for a bad argument. */
int fake_kfd_configure(const char *gpu, unsigned gpus, int distinct_gpu_addresses);

/* While `on`, no queue consumes packets: work stays queued, as behind a busy GPU. */
void fake_kfd_hold(int on);

/* A packet a command processor consumed: its queue (the hsa_queue_t, which starts ROCr's
 * amd_queue_t), AQL packet type, completion signal and, for a barrier, its first dependency. */
struct fake_kfd_packet {
  uint64_t queue;
  uint32_t type;
  uint32_t reserved;
  uint64_t completion_signal;
  uint64_t first_dependency;
};

/* Copies up to `max` logged packets, from the `from`th on (in the order queues consumed them; per
 * queue, the ring's order) into `out` (which may be NULL) and returns how many were logged in all.
 * The log keeps the first 65536. */
size_t fake_kfd_packets(struct fake_kfd_packet *out, size_t from, size_t max);

/* A GPU memory fault, as the KFD reports one: the memory event ROCr made (HSA_EVENTTYPE_MEMORY)
 * gets the fault (`gpu`: 0 for the first GPU; page not present at `virtual_address`; fatal to the
 * process) and is set. ROCr then calls its system event handlers with HSA_AMD_GPU_MEMORY_FAULT_EVENT,
 * or, with none, prints "Memory access fault by GPU" and aborts. Returns 0, or -1 when ROCr made no
 * memory event (not initialised). */
int fake_kfd_memory_fault(unsigned gpu, uint64_t virtual_address);

/* What device code's store to a signal does through ockl (__ockl_hsa_signal_store), as ROCm's
 * hostcall rings its doorbell: stores `value` into the user signal `handle` (an hsa_signal_t's handle)
 * and, when the signal has an event mailbox (signals the runtime can wait on with interrupts), writes
 * its event id there and raises the event. Returns 0, or -1 when `handle` is not a user signal. */
int fake_kfd_signal_store(uint64_t handle, int64_t value);

/* The host address behind a GPU virtual address. It is the address itself except in the
 * FAKE_KFD_DISTINCT_GPU_ADDRESSES=1 mode, where registered (locked) host memory gets GPU addresses
 * that the host cannot dereference; kernel bodies use this to follow such pointers. */
void *fake_kfd_host_address(uint64_t gpu_address);

#ifdef __cplusplus
}
#endif

#endif /* FAKE_KFD_H */
