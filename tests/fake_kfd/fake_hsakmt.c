/*
 * fake_hsakmt.c: a fake AMD kernel-driver thunk (libhsakmt.so.1) for tests without a GPU.
 *
 * What it is. ROCr, AMD's HSA runtime (libhsa-runtime64.so.1), talks to the amdgpu kernel driver
 * (KFD) only through the "thunk" library libhsakmt.so.1. This file is a replacement for that
 * library: it reports a made-up topology (node 0: the CPU, node 1: one GPU, gfx90a by default),
 * hands out ordinary host memory as "device" memory, and runs a thread per AQL queue that plays
 * the GPU's command processor: it reads the packets ROCr and its clients write, carries out
 * ROCr's own blit kernels (copy and fill) as memcpy/memset, calls host functions registered for
 * user kernels (fake_kfd.h), and completes the packets' signals the way the hardware does
 * (decrement, write the event id to the signal's mailbox, raise the event).
 *
 * Why it exists. It lets omprpc's AMDGPU plugin be tested against the real, unmodified ROCr
 * (Debian's 5.2.3) on any machine: hsa_init, agent and pool discovery, memory allocation and
 * locking, copies, code object loading and symbol lookup, queues and signals all run ROCr's own
 * code. Build with scripts/build-fake-kfd.sh OUTDIR and run with LD_LIBRARY_PATH=OUTDIR.
 *
 * What it cannot show. Device code does not run: a user kernel either runs a host body the test
 * registered or does nothing (and is counted). There is no timing model: everything completes as
 * fast as the host does, so races that need a slow GPU are unlikely to show. All memory is
 * coherent host memory, so missing fences, cache invalidations, coarse-grained visibility rules
 * or wrong memory-pool choices go unnoticed. SDMA engines, scratch, GWS, IPC, SVM and graphics
 * interop are refused or stubbed. The topology is fixed (one CPU node, one GPU node).
 *
 * Environment:
 *   FAKE_KFD_GPU=gfx90a (default, wave64) | gfx1030 (wave32)
 *   FAKE_KFD_DISTINCT_GPU_ADDRESSES=1  registered host memory (hsa_amd_memory_lock) gets a GPU
 *                                      address different from its host address; the fake's
 *                                      command processor translates it back for blit kernels.
 *   FAKE_KFD_VERBOSE=1                 log queues and dispatches to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hsakmt.h>

#include "fake_kfd.h"

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------------------------------
 * Configuration and failure injection
 * ---------------------------------------------------------------------------------------------- */

enum gpu_kind { GPU_GFX90A, GPU_GFX1030 };

#define MAX_GPUS 8

static struct {
  enum gpu_kind gpu;
  unsigned gpus; /* GPU nodes 1..gpus; node 0 is the CPU */
  bool distinct_gpu_addresses;
  bool verbose;
} cfg;

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static void read_config(void) {
  const char *gpu = getenv("FAKE_KFD_GPU");
  cfg.gpu = GPU_GFX90A;
  if (gpu != NULL && strcmp(gpu, "gfx1030") == 0) cfg.gpu = GPU_GFX1030;
  else if (gpu != NULL && gpu[0] != '\0' && strcmp(gpu, "gfx90a") != 0)
    fprintf(stderr, "fake_kfd: unknown FAKE_KFD_GPU=%s, using gfx90a\n", gpu);
  const char *gpus = getenv("FAKE_KFD_GPUS");
  cfg.gpus = 1;
  if (gpus != NULL && gpus[0] != '\0') {
    long n = strtol(gpus, NULL, 10);
    if (n >= 1 && n <= MAX_GPUS) cfg.gpus = (unsigned)n;
    else fprintf(stderr, "fake_kfd: FAKE_KFD_GPUS=%s is not 1 to %d, using 1\n", gpus, MAX_GPUS);
  }
  const char *distinct = getenv("FAKE_KFD_DISTINCT_GPU_ADDRESSES");
  cfg.distinct_gpu_addresses = distinct != NULL && strcmp(distinct, "1") == 0;
  const char *verbose = getenv("FAKE_KFD_VERBOSE");
  cfg.verbose = verbose != NULL && strcmp(verbose, "1") == 0;
}

static void config(void) { pthread_once(&cfg_once, read_config); }

#define LOG(...)                                                                                   \
  do {                                                                                             \
    if (cfg.verbose) fprintf(stderr, "fake_kfd: " __VA_ARGS__);                                   \
  } while (0)

/* Names armed by fake_kfd_fail_next; each entry fires once. */
#define MAX_FAIL_POINTS 16
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char fail_points[MAX_FAIL_POINTS][64];

EXPORT void fake_kfd_fail_next(const char *thunk_function_name) {
  pthread_mutex_lock(&fail_lock);
  for (int i = 0; i < MAX_FAIL_POINTS; i++) {
    if (fail_points[i][0] == '\0') {
      snprintf(fail_points[i], sizeof fail_points[i], "%s", thunk_function_name);
      break;
    }
  }
  pthread_mutex_unlock(&fail_lock);
}

static bool should_fail(const char *name) {
  bool fail = false;
  pthread_mutex_lock(&fail_lock);
  for (int i = 0; i < MAX_FAIL_POINTS; i++) {
    if (fail_points[i][0] != '\0' && strcmp(fail_points[i], name) == 0) {
      fail_points[i][0] = '\0';
      fail = true;
      break;
    }
  }
  pthread_mutex_unlock(&fail_lock);
  return fail;
}

/* First statement of every thunk function. */
#define FAIL_POINT()                                                                               \
  do {                                                                                             \
    config();                                                                                      \
    if (should_fail(__func__)) {                                                                   \
      LOG("%s: injected failure\n", __func__);                                                     \
      return HSAKMT_STATUS_ERROR;                                                                  \
    }                                                                                              \
  } while (0)

/* ------------------------------------------------------------------------------------------------
 * Time
 * ---------------------------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------------------------------
 * Topology: node 0 is the CPU, nodes 1 to cfg.gpus the GPUs (all of one model).
 * ---------------------------------------------------------------------------------------------- */

#define MAX_NODES (1 + MAX_GPUS)
#define CPU_NODE 0

static unsigned num_nodes(void) { return 1 + cfg.gpus; }
static bool is_gpu_node(HSAuint32 node) { return node >= 1 && node <= cfg.gpus; }

/* Apertures the GPU node reports. ROCr only stores their bases (it asserts the LDS one is not 0);
 * no memory is ever accessed there. */
#define LDS_APERTURE_BASE 0x1000000000000ull
#define SCRATCH_APERTURE_BASE 0x2000000000000ull
#define APERTURE_SIZE (4ull << 30)

struct gpu_model {
  const char *name;
  unsigned major, minor, stepping;
  unsigned compute_units, simds_per_cu, waves_per_simd, wavefront_size;
  uint16_t device_id;
  uint64_t vram_bytes;
  const char *marketing_name;
};

static const struct gpu_model gpu_models[] = {
    [GPU_GFX90A] = {"gfx90a", 9, 0, 10, 104, 4, 8, 64, 0x740f, 64ull << 30,
                    "Fake KFD gfx90a (AMD Instinct MI210)"},
    [GPU_GFX1030] = {"gfx1030", 10, 3, 0, 60, 2, 16, 32, 0x73bf, 16ull << 30,
                     "Fake KFD gfx1030 (AMD Radeon RX 6800)"},
};

static const struct gpu_model *gpu(void) { return &gpu_models[cfg.gpu]; }

static uint64_t system_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return (pages > 0 && page > 0) ? (uint64_t)pages * (uint64_t)page : (16ull << 30);
}

static void set_names(HsaNodeProperties *p, const char *marketing, const char *amd) {
  for (size_t i = 0; i + 1 < HSA_PUBLIC_NAME_SIZE && marketing[i] != '\0'; i++)
    p->MarketingName[i] = (HSAuint16)(unsigned char)marketing[i];
  snprintf((char *)p->AMDName, sizeof p->AMDName, "%s", amd);
}

EXPORT HSAKMT_STATUS hsaKmtGetVersion(HsaVersionInfo *VersionInfo) {
  FAIL_POINT();
  if (VersionInfo == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  /* 1.0 would make ROCr poll instead of waiting on events; 1.6 is a KFD of the ROCm 5.2 era. */
  VersionInfo->KernelInterfaceMajorVersion = 1;
  VersionInfo->KernelInterfaceMinorVersion = 6;
  return HSAKMT_STATUS_SUCCESS;
}

static atomic_int kfd_open_count;

EXPORT int fake_kfd_configure(const char *gpu_name, unsigned gpus, int distinct_gpu_addresses) {
  config();
  if (atomic_load(&kfd_open_count) > 0 || gpus < 1 || gpus > MAX_GPUS) return -1;
  if (gpu_name != NULL) {
    if (strcmp(gpu_name, "gfx90a") == 0) cfg.gpu = GPU_GFX90A;
    else if (strcmp(gpu_name, "gfx1030") == 0) cfg.gpu = GPU_GFX1030;
    else return -1;
  }
  cfg.gpus = gpus;
  cfg.distinct_gpu_addresses = distinct_gpu_addresses != 0;
  return 0;
}

EXPORT HSAKMT_STATUS hsaKmtOpenKFD(void) {
  FAIL_POINT();
  atomic_fetch_add(&kfd_open_count, 1);
  LOG("open: %u x %s, distinct GPU addresses %s\n", cfg.gpus, gpu()->name,
      cfg.distinct_gpu_addresses ? "on" : "off");
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtCloseKFD(void) {
  FAIL_POINT();
  if (atomic_load(&kfd_open_count) <= 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  atomic_fetch_sub(&kfd_open_count, 1);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtRuntimeEnable(void *rDebug, bool setupTtmp) {
  FAIL_POINT();
  (void)rDebug;
  (void)setupTtmp;
  /* ROCr accepts this and then uses the pre-debugger trap handler and queue setup. */
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtRuntimeDisable(void) {
  FAIL_POINT();
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtAcquireSystemProperties(HsaSystemProperties *SystemProperties) {
  FAIL_POINT();
  if (SystemProperties == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  memset(SystemProperties, 0, sizeof *SystemProperties);
  SystemProperties->NumNodes = num_nodes();
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtReleaseSystemProperties(void) {
  FAIL_POINT();
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtGetNodeProperties(HSAuint32 NodeId, HsaNodeProperties *p) {
  FAIL_POINT();
  if (p == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  memset(p, 0, sizeof *p);
  if (NodeId == CPU_NODE) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->NumCPUCores = cores > 0 ? (HSAuint32)cores : 1;
    p->NumMemoryBanks = 1; /* system memory */
    p->NumCaches = 1;
    p->NumIOLinks = cfg.gpus; /* to each GPU */
    p->MaxEngineClockMhzCCompute = 3000;
    set_names(p, "Fake KFD CPU", "CPU");
    return HSAKMT_STATUS_SUCCESS;
  }
  if (is_gpu_node(NodeId)) {
    const struct gpu_model *g = gpu();
    p->NumFComputeCores = g->compute_units * g->simds_per_cu; /* nonzero: a GPU node */
    p->NumMemoryBanks = 3; /* VRAM, LDS aperture, scratch aperture */
    p->NumCaches = 2;
    p->NumIOLinks = cfg.gpus; /* to the CPU, and to each other GPU */
    p->FComputeIdLo = 0x80000000u;
    p->Capability.ui32.DoorbellType = 2; /* 64-bit AQL doorbells: the write index is stored */
    p->Capability.ui32.QueueSizePowerOfTwo = 1;
    /* SRAM ECC on for the gfx90a, as on an MI200 (ROCr then names its ISA gfx90a:sramecc+:xnack-). */
    p->Capability.ui32.SRAM_EDCSupport = cfg.gpu == GPU_GFX90A;
    p->MaxWavesPerSIMD = g->waves_per_simd;
    p->LDSSizeInKB = 64;
    p->WaveFrontSize = g->wavefront_size;
    p->NumShaderBanks = 4;
    p->NumArrays = 1;
    p->NumCUPerArray = g->compute_units / 4;
    p->NumSIMDPerCU = g->simds_per_cu;
    p->MaxSlotsScratchCU = 32;
    p->EngineId.ui32.Major = g->major & 0x3f;
    p->EngineId.ui32.Minor = g->minor & 0xff;
    p->EngineId.ui32.Stepping = g->stepping & 0xff;
    p->EngineId.ui32.uCode = 1000;
    p->VendorId = 0x1002;
    p->DeviceId = g->device_id;
    p->LocationId = 0x0300 + 0x100 * NodeId;
    p->LocalMemSize = g->vram_bytes;
    p->MaxEngineClockMhzFCompute = 1700;
    p->DrmRenderMinor = 127 + (int)NodeId;
    p->uCodeEngineVersions.uCodeSDMA = 100;
    /* No SDMA engines: ROCr would try SDMA queues for host<->device copies (refused below
     * anyway); without them it uses its blit kernels, which this fake carries out. */
    p->NumSdmaEngines = 0;
    p->NumSdmaXgmiEngines = 0;
    p->NumSdmaQueuesPerEngine = 0;
    p->NumCpQueues = 24;
    p->NumGws = 0; /* no cooperative queues */
    p->UniqueID = 0xfa6e0000f00dull + ((uint64_t)cfg.gpu << 8) + NodeId;
    set_names(p, g->marketing_name, g->name);
    return HSAKMT_STATUS_SUCCESS;
  }
  return HSAKMT_STATUS_INVALID_NODE_UNIT;
}

EXPORT HSAKMT_STATUS hsaKmtGetNodeMemoryProperties(HSAuint32 NodeId, HSAuint32 NumBanks,
                                                   HsaMemoryProperties *MemoryProperties) {
  FAIL_POINT();
  if (MemoryProperties == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  HsaMemoryProperties banks[3];
  HSAuint32 count = 0;
  memset(banks, 0, sizeof banks);
  if (NodeId == CPU_NODE) {
    /* ROCr builds the CPU's fine-grained, kernarg and coarse-grained pools from this heap. */
    banks[0].HeapType = HSA_HEAPTYPE_SYSTEM;
    banks[0].SizeInBytes = system_memory_bytes();
    banks[0].Width = 64;
    banks[0].MemoryClockMax = 3200;
    count = 1;
  } else if (is_gpu_node(NodeId)) {
    banks[0].HeapType = HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE;
    banks[0].SizeInBytes = gpu()->vram_bytes;
    banks[0].Width = 4096;
    banks[0].MemoryClockMax = 1600;
    banks[1].HeapType = HSA_HEAPTYPE_GPU_LDS; /* ROCr asserts a nonzero LDS aperture base */
    banks[1].SizeInBytes = APERTURE_SIZE;
    banks[1].VirtualBaseAddress = LDS_APERTURE_BASE;
    banks[2].HeapType = HSA_HEAPTYPE_GPU_SCRATCH;
    banks[2].SizeInBytes = APERTURE_SIZE;
    banks[2].VirtualBaseAddress = SCRATCH_APERTURE_BASE;
    count = 3;
  } else {
    return HSAKMT_STATUS_INVALID_NODE_UNIT;
  }
  for (HSAuint32 i = 0; i < NumBanks && i < count; i++) MemoryProperties[i] = banks[i];
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtGetNodeCacheProperties(HSAuint32 NodeId, HSAuint32 ProcessorId,
                                                  HSAuint32 NumCaches,
                                                  HsaCacheProperties *CacheProperties) {
  FAIL_POINT();
  (void)ProcessorId;
  if (CacheProperties == NULL && NumCaches != 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  HsaCacheProperties caches[2];
  HSAuint32 count = 0;
  memset(caches, 0, sizeof caches);
  if (NodeId == CPU_NODE) {
    caches[0].CacheLevel = 1;
    caches[0].CacheSize = 32; /* KiB */
    caches[0].CacheLineSize = 64;
    caches[0].CacheType.ui32.Data = 1;
    caches[0].CacheType.ui32.CPU = 1;
    count = 1;
  } else if (is_gpu_node(NodeId)) {
    /* ROCr's HSA_AGENT_INFO_CACHE_SIZE asserts the GPU has data caches. */
    caches[0].CacheLevel = 1;
    caches[0].CacheSize = 16;
    caches[0].CacheLineSize = 64;
    caches[0].CacheType.ui32.Data = 1;
    caches[0].CacheType.ui32.HSACU = 1;
    caches[1].CacheLevel = 2;
    caches[1].CacheSize = 8192;
    caches[1].CacheLineSize = 128;
    caches[1].CacheType.ui32.Data = 1;
    caches[1].CacheType.ui32.HSACU = 1;
    count = 2;
  } else {
    return HSAKMT_STATUS_INVALID_NODE_UNIT;
  }
  for (HSAuint32 i = 0; i < NumCaches && i < count; i++) {
    caches[i].ProcessorIdLow = ProcessorId;
    CacheProperties[i] = caches[i];
  }
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtGetNodeIoLinkProperties(HSAuint32 NodeId, HSAuint32 NumIoLinks,
                                                   HsaIoLinkProperties *IoLinkProperties) {
  FAIL_POINT();
  if (NodeId >= num_nodes()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  if (IoLinkProperties == NULL && NumIoLinks != 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  /* The CPU has a PCIe link to each GPU and each GPU one back. Without them ROCr reports CPU
   * memory as never accessible to a GPU (and the reverse), since it derives access from the
   * links. GPUs are also linked to each other by XGMI, as the GCDs of an MI250 are, so that each
   * may be given access to another's memory. */
  HSAuint32 count = 0;
  for (HSAuint32 to = 0; to < num_nodes() && count < NumIoLinks; to++) {
    if (to == NodeId) continue;
    bool cpu_side = NodeId == CPU_NODE || to == CPU_NODE;
    HsaIoLinkProperties *l = &IoLinkProperties[count++];
    memset(l, 0, sizeof *l);
    l->IoLinkType = cpu_side ? HSA_IOLINKTYPE_PCIEXPRESS : HSA_IOLINK_TYPE_XGMI;
    l->VersionMajor = cpu_side ? 4 : 2;
    l->NodeFrom = NodeId;
    l->NodeTo = to;
    l->Weight = cpu_side ? 20 : 15;
    l->MinimumBandwidth = cpu_side ? 16000 : 50000;
    l->MaximumBandwidth = cpu_side ? 32000 : 100000;
  }
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtGetXNACKMode(HSAint32 *enable) {
  FAIL_POINT();
  if (enable == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  *enable = 0;
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtSetXNACKMode(HSAint32 enable) {
  FAIL_POINT();
  /* Only "off" is offered: it is what the GPU node's ISA reports. */
  return enable == 0 ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtGetClockCounters(HSAuint32 NodeId, HsaClockCounters *Counters) {
  FAIL_POINT();
  (void)NodeId;
  if (Counters == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  /* One clock for all: nanoseconds of CLOCK_MONOTONIC (the fake's signal time stamps too). */
  uint64_t t = now_ns();
  Counters->GPUClockCounter = t;
  Counters->CPUClockCounter = t;
  Counters->SystemClockCounter = t;
  Counters->SystemClockFrequencyHz = 1000000000u;
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtGetTileConfig(HSAuint32 NodeId, HsaGpuTileConfig *config_out) {
  FAIL_POINT();
  if (!is_gpu_node(NodeId)) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  if (config_out == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  config_out->NumTileConfigs = 0;
  config_out->NumMacroTileConfigs = 0;
  config_out->GbAddrConfig = 0;
  config_out->NumBanks = 0;
  config_out->NumRanks = 0;
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtSetMemoryPolicy(HSAuint32 Node, HSAuint32 DefaultPolicy,
                                           HSAuint32 AlternatePolicy, void *MemoryAddressAlternate,
                                           HSAuint64 MemorySizeInBytes) {
  FAIL_POINT();
  (void)Node;
  (void)DefaultPolicy;
  (void)AlternatePolicy;
  (void)MemoryAddressAlternate;
  (void)MemorySizeInBytes;
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtSetTrapHandler(HSAuint32 NodeId, void *TrapHandlerBaseAddress,
                                          HSAuint64 TrapHandlerSizeInBytes,
                                          void *TrapBufferBaseAddress,
                                          HSAuint64 TrapBufferSizeInBytes) {
  FAIL_POINT();
  (void)NodeId;
  (void)TrapHandlerBaseAddress;
  (void)TrapHandlerSizeInBytes;
  (void)TrapBufferBaseAddress;
  (void)TrapBufferSizeInBytes;
  return HSAKMT_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------------
 * Memory: every allocation is an anonymous mapping; its GPU address is its host address, except
 * registered user memory in the distinct-address mode.
 * ---------------------------------------------------------------------------------------------- */

struct mem_obj {
  uint64_t cpu;  /* host address of the range */
  uint64_t gpu;  /* GPU address of the range (== cpu unless distinct) */
  uint64_t size; /* size as requested */
  void *map_base; /* what to munmap (owned allocations), with map_size */
  uint64_t map_size;
  HSA_POINTER_TYPE type;
  HsaMemFlags flags;
  uint32_t node;
  int registrations; /* registered user memory: hsaKmtRegisterMemory* calls not yet undone */
  uint32_t nmapped;
  uint32_t mapped_nodes[MAX_NODES];
  uint32_t nregistered;
  uint32_t registered_nodes[MAX_NODES];
  void *user_data;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_obj **objs;
static size_t nobjs, cap_objs;

/* Distinct-address mode: GPU addresses for registered memory come from this reserved,
 * inaccessible range, so that using one on the host faults. */
#define ALIAS_RANGE_SIZE (1ull << 40)
static uint8_t *alias_base;
static uint64_t alias_next;

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

static bool in_range(uint64_t p, uint64_t base, uint64_t size) {
  return p >= base && p - base < (size == 0 ? 1 : size);
}

/* The object whose host range holds p; with mem_lock held. */
static struct mem_obj *find_by_cpu(uint64_t p) {
  for (size_t i = 0; i < nobjs; i++)
    if (in_range(p, objs[i]->cpu, objs[i]->size)) return objs[i];
  return NULL;
}

/* The object whose GPU range holds p; with mem_lock held. */
static struct mem_obj *find_by_gpu(uint64_t p) {
  for (size_t i = 0; i < nobjs; i++)
    if (in_range(p, objs[i]->gpu, objs[i]->size)) return objs[i];
  return NULL;
}

static struct mem_obj *add_obj(void) {
  if (nobjs == cap_objs) {
    size_t cap = cap_objs ? cap_objs * 2 : 64;
    struct mem_obj **grown = realloc(objs, cap * sizeof *grown);
    if (grown == NULL) return NULL;
    objs = grown;
    cap_objs = cap;
  }
  struct mem_obj *o = calloc(1, sizeof *o);
  if (o != NULL) objs[nobjs++] = o;
  return o;
}

static void remove_obj(struct mem_obj *o) {
  for (size_t i = 0; i < nobjs; i++) {
    if (objs[i] == o) {
      objs[i] = objs[--nobjs];
      free(o);
      return;
    }
  }
}

/* Host address of GPU address va (identity unless va lies in a distinct-mode alias). */
static void *host_address(uint64_t va) {
  void *host = (void *)(uintptr_t)va;
  if (!cfg.distinct_gpu_addresses) return host;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_by_gpu(va);
  if (o != NULL) host = (void *)(uintptr_t)(o->cpu + (va - o->gpu));
  pthread_mutex_unlock(&mem_lock);
  return host;
}

/* The host address of [va, va + len) as the GPU reaches it: memory the fake allocated, or registered
 * user memory at its GPU address. Anything else (pageable host memory never registered, or registered
 * memory at its host address where that differs from its GPU address) is not in the GPU's page
 * tables: as on hardware, the access is a memory fault, and ROCr would abort the process with
 * "Memory access fault by GPU". */
static void *gpu_access(uint64_t va, uint64_t len, const char *what) {
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_by_gpu(va);
  bool mapped = o != NULL && va - o->gpu + len <= o->size;
  void *host = mapped ? (void *)(uintptr_t)(o->cpu + (va - o->gpu)) : NULL;
  pthread_mutex_unlock(&mem_lock);
  if (!mapped) {
    fprintf(stderr,
            "fake_kfd: Memory access fault by GPU: %s 0x%llx..0x%llx is not mapped for the GPU "
            "(host memory that was not locked, or locked memory used at its host address)\n",
            what, (unsigned long long)va, (unsigned long long)(va + len));
    abort();
  }
  return host;
}

/* Whether [va, va + len) lies in one object the fake allocated or registered. */
static bool known_range(uint64_t va, uint64_t len) {
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_by_cpu(va);
  uint64_t base = o != NULL ? o->cpu : 0;
  if (o == NULL && (o = find_by_gpu(va)) != NULL) base = o->gpu;
  bool known = o != NULL && va - base + len <= o->size;
  pthread_mutex_unlock(&mem_lock);
  return known;
}

EXPORT void *fake_kfd_host_address(uint64_t gpu_address) {
  config();
  return host_address(gpu_address);
}

EXPORT HSAKMT_STATUS hsaKmtAllocMemory(HSAuint32 PreferredNode, HSAuint64 SizeInBytes,
                                       HsaMemFlags MemFlags, void **MemoryAddress) {
  FAIL_POINT();
  if (MemoryAddress == NULL || SizeInBytes == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (PreferredNode >= num_nodes()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  uint64_t page = 4096;
  if (SizeInBytes % page != 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  /* Large allocations are 2 MiB aligned like the real thunk's (ROCr's 2 MiB VRAM blocks). */
  uint64_t align = SizeInBytes >= (2u << 20) ? (2u << 20) : page;
  int prot = PROT_READ | PROT_WRITE;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void *base;
  uint64_t map_size;
  if (MemFlags.ui32.FixedAddress) {
    base = mmap(*MemoryAddress, SizeInBytes, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (base == MAP_FAILED) return HSAKMT_STATUS_NO_MEMORY;
    if (base != *MemoryAddress) {
      munmap(base, SizeInBytes);
      return HSAKMT_STATUS_NO_MEMORY;
    }
    map_size = SizeInBytes;
  } else {
    /* Over-allocate, then trim to the alignment. */
    map_size = SizeInBytes + align - page;
    uint8_t *raw = mmap(NULL, map_size, prot, flags, -1, 0);
    if (raw == MAP_FAILED) return HSAKMT_STATUS_NO_MEMORY;
    uint8_t *aligned = (uint8_t *)(uintptr_t)round_up((uintptr_t)raw, align);
    if (aligned > raw) munmap(raw, (size_t)(aligned - raw));
    uint8_t *end = raw + map_size, *want_end = aligned + SizeInBytes;
    if (end > want_end) munmap(want_end, (size_t)(end - want_end));
    base = aligned;
    map_size = SizeInBytes;
  }
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = add_obj();
  if (o != NULL) {
    o->cpu = o->gpu = (uint64_t)(uintptr_t)base;
    o->size = SizeInBytes;
    o->map_base = base;
    o->map_size = map_size;
    o->type = HSA_POINTER_ALLOCATED;
    o->flags = MemFlags;
    o->node = PreferredNode;
  }
  pthread_mutex_unlock(&mem_lock);
  if (o == NULL) {
    munmap(base, map_size);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  *MemoryAddress = base;
  LOG("alloc node %u size 0x%llx flags 0x%x -> %p\n", PreferredNode,
      (unsigned long long)SizeInBytes, MemFlags.Value, base);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtFreeMemory(void *MemoryAddress, HSAuint64 SizeInBytes) {
  FAIL_POINT();
  (void)SizeInBytes;
  if (MemoryAddress == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_by_cpu((uint64_t)(uintptr_t)MemoryAddress);
  if (o == NULL || o->type != HSA_POINTER_ALLOCATED ||
      o->cpu != (uint64_t)(uintptr_t)MemoryAddress) {
    pthread_mutex_unlock(&mem_lock);
    return HSAKMT_STATUS_INVALID_PARAMETER;
  }
  void *map_base = o->map_base;
  uint64_t map_size = o->map_size;
  remove_obj(o);
  pthread_mutex_unlock(&mem_lock);
  munmap(map_base, map_size);
  return HSAKMT_STATUS_SUCCESS;
}

/* Finds the object for a map/unmap/deregister address: host or (distinct mode) GPU address. */
static struct mem_obj *find_for_address(const void *p) {
  struct mem_obj *o = find_by_cpu((uint64_t)(uintptr_t)p);
  if (o == NULL) o = find_by_gpu((uint64_t)(uintptr_t)p);
  return o;
}

static HSAKMT_STATUS map_to_nodes(void *MemoryAddress, HSAuint64 *AlternateVAGPU,
                                  HSAuint64 NumberOfNodes, const HSAuint32 *NodeArray) {
  if (MemoryAddress == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_for_address(MemoryAddress);
  if (o == NULL) {
    pthread_mutex_unlock(&mem_lock);
    return HSAKMT_STATUS_INVALID_PARAMETER;
  }
  /* Mapping is bookkeeping only: which nodes pointer info reports. */
  o->nmapped = 0;
  if (NodeArray == NULL) {
    for (HSAuint32 n = 1; n <= cfg.gpus; n++) o->mapped_nodes[o->nmapped++] = n;
  } else {
    for (HSAuint64 i = 0; i < NumberOfNodes && o->nmapped < MAX_NODES; i++)
      if (NodeArray[i] < num_nodes()) o->mapped_nodes[o->nmapped++] = NodeArray[i];
  }
  /* The GPU address of MemoryAddress. ROCr uses a nonzero one as the agent's pointer to locked
   * memory; it equals MemoryAddress except in the distinct-address mode. */
  if (AlternateVAGPU != NULL) {
    uint64_t p = (uint64_t)(uintptr_t)MemoryAddress;
    *AlternateVAGPU = in_range(p, o->cpu, o->size) ? o->gpu + (p - o->cpu) : p;
  }
  pthread_mutex_unlock(&mem_lock);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtMapMemoryToGPU(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                          HSAuint64 *AlternateVAGPU) {
  FAIL_POINT();
  (void)MemorySizeInBytes;
  return map_to_nodes(MemoryAddress, AlternateVAGPU, 0, NULL);
}

EXPORT HSAKMT_STATUS hsaKmtMapMemoryToGPUNodes(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                               HSAuint64 *AlternateVAGPU,
                                               HsaMemMapFlags MemMapFlags, HSAuint64 NumberOfNodes,
                                               HSAuint32 *NodeArray) {
  FAIL_POINT();
  (void)MemorySizeInBytes;
  (void)MemMapFlags;
  return map_to_nodes(MemoryAddress, AlternateVAGPU, NumberOfNodes, NodeArray);
}

EXPORT HSAKMT_STATUS hsaKmtUnmapMemoryToGPU(void *MemoryAddress) {
  FAIL_POINT();
  if (MemoryAddress == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_for_address(MemoryAddress);
  if (o != NULL) o->nmapped = 0;
  pthread_mutex_unlock(&mem_lock);
  /* Like the real thunk, unmapping unknown memory is not an error ROCr cares about. */
  return o != NULL ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_INVALID_PARAMETER;
}

EXPORT HSAKMT_STATUS hsaKmtRegisterMemoryWithFlags(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                                   HsaMemFlags MemFlags) {
  FAIL_POINT();
  if (MemoryAddress == NULL || MemorySizeInBytes == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  uint64_t cpu = (uint64_t)(uintptr_t)MemoryAddress;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_by_cpu(cpu);
  if (o != NULL) {
    /* Registering fake-allocated memory is a no-op; registering the same user range again
     * counts (the real thunk keeps a registration count too). */
    HSAKMT_STATUS st = HSAKMT_STATUS_SUCCESS;
    if (o->type == HSA_POINTER_REGISTERED_USER) {
      if (o->cpu == cpu && o->size == MemorySizeInBytes) o->registrations++;
      else st = HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED;
    }
    pthread_mutex_unlock(&mem_lock);
    return st;
  }
  o = add_obj();
  if (o == NULL) {
    pthread_mutex_unlock(&mem_lock);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  o->cpu = o->gpu = cpu;
  o->size = MemorySizeInBytes;
  o->type = HSA_POINTER_REGISTERED_USER;
  o->flags = MemFlags;
  o->node = CPU_NODE;
  o->registrations = 1;
  for (HSAuint32 n = 1; n <= cfg.gpus; n++) o->registered_nodes[o->nregistered++] = n;
  if (cfg.distinct_gpu_addresses) {
    if (alias_base == NULL) {
      void *r = mmap(NULL, ALIAS_RANGE_SIZE, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      alias_base = r == MAP_FAILED ? NULL : r;
    }
    uint64_t offset = cpu & 4095u, span = round_up(offset + MemorySizeInBytes, 4096);
    if (alias_base != NULL && alias_next + span + 4096 <= ALIAS_RANGE_SIZE) {
      o->gpu = (uint64_t)(uintptr_t)alias_base + alias_next + offset;
      alias_next += span + 4096; /* a guard page between aliases */
    }
  }
  pthread_mutex_unlock(&mem_lock);
  LOG("register %p size 0x%llx gpu 0x%llx\n", MemoryAddress,
      (unsigned long long)MemorySizeInBytes, (unsigned long long)o->gpu);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtDeregisterMemory(void *MemoryAddress) {
  FAIL_POINT();
  if (MemoryAddress == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_for_address(MemoryAddress);
  HSAKMT_STATUS st = HSAKMT_STATUS_MEMORY_NOT_REGISTERED;
  if (o != NULL && o->type == HSA_POINTER_REGISTERED_USER) {
    if (--o->registrations == 0) remove_obj(o);
    st = HSAKMT_STATUS_SUCCESS;
  } else if (o != NULL) {
    st = HSAKMT_STATUS_SUCCESS; /* fake-allocated memory: nothing to undo */
  }
  pthread_mutex_unlock(&mem_lock);
  return st;
}

EXPORT HSAKMT_STATUS hsaKmtQueryPointerInfo(const void *Pointer, HsaPointerInfo *PointerInfo) {
  FAIL_POINT();
  if (PointerInfo == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  memset(PointerInfo, 0, sizeof *PointerInfo);
  PointerInfo->Type = HSA_POINTER_UNKNOWN;
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_for_address(Pointer);
  if (o == NULL) {
    pthread_mutex_unlock(&mem_lock);
    return HSAKMT_STATUS_ERROR; /* as the real thunk: unknown pointer, type UNKNOWN */
  }
  PointerInfo->Type = o->type;
  PointerInfo->Node = o->node;
  PointerInfo->MemFlags = o->flags;
  PointerInfo->CPUAddress = (void *)(uintptr_t)o->cpu;
  PointerInfo->GPUAddress = o->gpu;
  PointerInfo->SizeInBytes = o->size;
  PointerInfo->NRegisteredNodes = o->type == HSA_POINTER_REGISTERED_USER ? o->nregistered : 0;
  PointerInfo->RegisteredNodes = o->registered_nodes;
  PointerInfo->NMappedNodes = o->nmapped;
  PointerInfo->MappedNodes = o->mapped_nodes; /* ROCr copies these under its own lock */
  PointerInfo->UserData = o->user_data;
  pthread_mutex_unlock(&mem_lock);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtSetMemoryUserData(const void *Pointer, void *UserData) {
  FAIL_POINT();
  pthread_mutex_lock(&mem_lock);
  struct mem_obj *o = find_for_address(Pointer);
  if (o != NULL) o->user_data = UserData;
  pthread_mutex_unlock(&mem_lock);
  return o != NULL ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_INVALID_PARAMETER;
}

/* IPC, graphics interop and SVM are not offered. */

EXPORT HSAKMT_STATUS hsaKmtShareMemory(void *MemoryAddress, HSAuint64 SizeInBytes,
                                       HsaSharedMemoryHandle *SharedMemoryHandle) {
  FAIL_POINT();
  (void)MemoryAddress;
  (void)SizeInBytes;
  (void)SharedMemoryHandle;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtRegisterSharedHandle(const HsaSharedMemoryHandle *SharedMemoryHandle,
                                                void **MemoryAddress, HSAuint64 *SizeInBytes) {
  FAIL_POINT();
  (void)SharedMemoryHandle;
  (void)MemoryAddress;
  (void)SizeInBytes;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtRegisterSharedHandleToNodes(
    const HsaSharedMemoryHandle *SharedMemoryHandle, void **MemoryAddress, HSAuint64 *SizeInBytes,
    HSAuint64 NumberOfNodes, HSAuint32 *NodeArray) {
  FAIL_POINT();
  (void)SharedMemoryHandle;
  (void)MemoryAddress;
  (void)SizeInBytes;
  (void)NumberOfNodes;
  (void)NodeArray;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtRegisterGraphicsHandleToNodes(
    HSAuint64 GraphicsResourceHandle, HsaGraphicsResourceInfo *GraphicsResourceInfo,
    HSAuint64 NumberOfNodes, HSAuint32 *NodeArray) {
  FAIL_POINT();
  (void)GraphicsResourceHandle;
  (void)GraphicsResourceInfo;
  (void)NumberOfNodes;
  (void)NodeArray;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtSVMSetAttr(void *start_addr, HSAuint64 size, unsigned int nattr,
                                      HSA_SVM_ATTRIBUTE *attrs) {
  FAIL_POINT();
  (void)start_addr;
  (void)size;
  (void)nattr;
  (void)attrs;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EXPORT HSAKMT_STATUS hsaKmtSVMGetAttr(void *start_addr, HSAuint64 size, unsigned int nattr,
                                      HSA_SVM_ATTRIBUTE *attrs) {
  FAIL_POINT();
  (void)start_addr;
  (void)size;
  (void)nattr;
  (void)attrs;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------------------------------------
 * Events. Each has an id (its slot in `events`) and a mailbox slot in `mailbox`, whose address
 * ROCr stores in its interrupt signals (amd_signal_t.event_mailbox_ptr); the command processor
 * writes the id there and raises the event, as the GPU's end-of-pipe interrupt would.
 * ---------------------------------------------------------------------------------------------- */

#define MAX_EVENTS 4096

struct fake_event {
  HsaEvent ev; /* first member: ROCr sees a HsaEvent* */
  bool manual_reset;
  bool signaled;
  uint64_t generation; /* sets so far: a waiter that saw it change was woken */
  unsigned waiters;    /* threads waiting on it now */
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond;
static bool ev_cond_ready;
static struct fake_event *events[MAX_EVENTS];
static uint64_t mailbox[MAX_EVENTS];

static void ev_init_locked(void) {
  if (ev_cond_ready) return;
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&ev_cond, &a);
  pthread_condattr_destroy(&a);
  ev_cond_ready = true;
}

EXPORT HSAKMT_STATUS hsaKmtCreateEvent(HsaEventDescriptor *EventDesc, bool ManualReset,
                                       bool IsSignaled, HsaEvent **Event) {
  FAIL_POINT();
  if (EventDesc == NULL || Event == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  struct fake_event *e = calloc(1, sizeof *e);
  if (e == NULL) return HSAKMT_STATUS_NO_MEMORY;
  pthread_mutex_lock(&ev_lock);
  ev_init_locked();
  uint32_t id = 0;
  for (uint32_t i = 1; i < MAX_EVENTS; i++) {
    if (events[i] == NULL) {
      id = i;
      break;
    }
  }
  if (id == 0) {
    pthread_mutex_unlock(&ev_lock);
    free(e);
    return HSAKMT_STATUS_OUT_OF_RESOURCES;
  }
  e->ev.EventId = id;
  e->ev.EventData.EventType = EventDesc->EventType;
  e->ev.EventData.HWData1 = id;
  e->ev.EventData.HWData2 = (HSAuint64)(uintptr_t)&mailbox[id];
  e->ev.EventData.HWData3 = id;
  e->manual_reset = ManualReset;
  e->signaled = IsSignaled;
  events[id] = e;
  pthread_mutex_unlock(&ev_lock);
  *Event = &e->ev;
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtDestroyEvent(HsaEvent *Event) {
  FAIL_POINT();
  if (Event == NULL) return HSAKMT_STATUS_INVALID_HANDLE;
  struct fake_event *e = (struct fake_event *)Event;
  pthread_mutex_lock(&ev_lock);
  if (Event->EventId < MAX_EVENTS && events[Event->EventId] == e) events[Event->EventId] = NULL;
  pthread_mutex_unlock(&ev_lock);
  free(e);
  return HSAKMT_STATUS_SUCCESS;
}

/* As the KFD does: setting an event wakes every thread waiting on it then; an auto-reset event
 * stays set only when nobody was waiting (several ROCr threads wait on one queue event at once,
 * its async-handler thread and a queue's destructor among them). */
static void set_event_locked(struct fake_event *e) {
  e->generation++;
  if (e->manual_reset || e->waiters == 0) e->signaled = true;
  pthread_cond_broadcast(&ev_cond);
}

EXPORT HSAKMT_STATUS hsaKmtSetEvent(HsaEvent *Event) {
  FAIL_POINT();
  if (Event == NULL) return HSAKMT_STATUS_INVALID_HANDLE;
  pthread_mutex_lock(&ev_lock);
  ev_init_locked();
  set_event_locked((struct fake_event *)Event);
  pthread_mutex_unlock(&ev_lock);
  return HSAKMT_STATUS_SUCCESS;
}

/* The command processor's interrupt: raise the event with this id, if it still exists. */
static void raise_event_id(uint32_t id) {
  if (id == 0 || id >= MAX_EVENTS) return;
  pthread_mutex_lock(&ev_lock);
  ev_init_locked();
  if (events[id] != NULL) set_event_locked(events[id]);
  pthread_mutex_unlock(&ev_lock);
}

EXPORT int fake_kfd_memory_fault(unsigned gpu, uint64_t virtual_address) {
  int found = -1;
  pthread_mutex_lock(&ev_lock);
  ev_init_locked();
  for (uint32_t id = 1; id < MAX_EVENTS && found < 0; id++) {
    struct fake_event *e = events[id];
    if (e == NULL || e->ev.EventData.EventType != HSA_EVENTTYPE_MEMORY) continue;
    /* What the KFD reports: the node, the address, why, and that the process cannot go on using
     * the GPU (ROCr's wait only returns for a memory event with this flag). */
    HsaMemoryAccessFault *fault = &e->ev.EventData.EventData.MemoryAccessFault;
    memset(fault, 0, sizeof *fault);
    fault->NodeId = 1 + gpu;
    fault->VirtualAddress = virtual_address;
    fault->Failure.NotPresent = 1;
    fault->Flags = HSA_EVENTID_MEMORY_FATAL_PROCESS;
    set_event_locked(e);
    found = 0;
  }
  pthread_mutex_unlock(&ev_lock);
  LOG("memory fault on GPU %u at 0x%llx: %s\n", gpu, (unsigned long long)virtual_address,
      found == 0 ? "reported" : "no memory event to report it on");
  return found;
}

EXPORT HSAKMT_STATUS hsaKmtWaitOnMultipleEvents(HsaEvent *Events[], HSAuint32 NumEvents,
                                                bool WaitOnAll, HSAuint32 Milliseconds) {
  FAIL_POINT();
  if (Events == NULL || NumEvents == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  uint64_t ns = (uint64_t)deadline.tv_nsec + (uint64_t)(Milliseconds % 1000) * 1000000u;
  deadline.tv_sec += (time_t)(Milliseconds / 1000) + (time_t)(ns / 1000000000u);
  deadline.tv_nsec = (long)(ns % 1000000000u);

  uint64_t seen[64], *generations = NumEvents <= 64 ? seen : calloc(NumEvents, sizeof *generations);
  if (generations == NULL) return HSAKMT_STATUS_NO_MEMORY;
  HSAKMT_STATUS st = HSAKMT_STATUS_WAIT_TIMEOUT;
  pthread_mutex_lock(&ev_lock);
  ev_init_locked();
  for (HSAuint32 i = 0; i < NumEvents; i++) {
    struct fake_event *e = (struct fake_event *)Events[i];
    if (e == NULL) continue;
    generations[i] = e->generation;
    e->waiters++;
  }
  for (;;) {
    HSAuint32 signaled = 0;
    for (HSAuint32 i = 0; i < NumEvents; i++) {
      struct fake_event *e = (struct fake_event *)Events[i];
      if (e != NULL && (e->signaled || e->generation != generations[i])) signaled++;
    }
    if (WaitOnAll ? signaled == NumEvents : signaled > 0) {
      /* Auto-reset events are consumed by the wait that saw them. */
      for (HSAuint32 i = 0; i < NumEvents; i++) {
        struct fake_event *e = (struct fake_event *)Events[i];
        if (e != NULL && e->signaled && !e->manual_reset) e->signaled = false;
      }
      st = HSAKMT_STATUS_SUCCESS;
      break;
    }
    if (Milliseconds == 0) break;
    int rc = Milliseconds == HSA_EVENTTIMEOUT_INFINITE
                 ? pthread_cond_wait(&ev_cond, &ev_lock)
                 : pthread_cond_timedwait(&ev_cond, &ev_lock, &deadline);
    if (rc == ETIMEDOUT) break;
  }
  for (HSAuint32 i = 0; i < NumEvents; i++)
    if (Events[i] != NULL) ((struct fake_event *)Events[i])->waiters--;
  pthread_mutex_unlock(&ev_lock);
  if (generations != seen) free(generations);
  return st;
}

EXPORT HSAKMT_STATUS hsaKmtWaitOnEvent(HsaEvent *Event, HSAuint32 Milliseconds) {
  FAIL_POINT();
  if (Event == NULL) return HSAKMT_STATUS_INVALID_HANDLE;
  HsaEvent *one[1] = {Event};
  return hsaKmtWaitOnMultipleEvents(one, 1, true, Milliseconds);
}

/* ------------------------------------------------------------------------------------------------
 * Kernels: host bodies registered by tests, and ROCr's blit kernels.
 * ---------------------------------------------------------------------------------------------- */

#define MAX_KERNELS 256
static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint64_t kernel_object;
  fake_kfd_kernel_body body;
  void *ctx;
} kernels[MAX_KERNELS];
static atomic_uint_fast64_t unregistered_dispatches, blit_dispatches;

EXPORT int fake_kfd_set_kernel(uint64_t kernel_object, fake_kfd_kernel_body body, void *ctx) {
  int ret = -1;
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; i < MAX_KERNELS; i++) {
    if (kernels[i].kernel_object == kernel_object) {
      kernels[i].body = body;
      kernels[i].ctx = ctx;
      if (body == NULL) kernels[i].kernel_object = 0;
      ret = 0;
      break;
    }
  }
  for (int i = 0; ret != 0 && body != NULL && i < MAX_KERNELS; i++) {
    if (kernels[i].kernel_object == 0) {
      kernels[i].kernel_object = kernel_object;
      kernels[i].body = body;
      kernels[i].ctx = ctx;
      ret = 0;
    }
  }
  if (body == NULL) ret = 0;
  pthread_mutex_unlock(&kernel_lock);
  return ret;
}

EXPORT uint64_t fake_kfd_dispatches(void) { return atomic_load(&unregistered_dispatches); }

EXPORT uint64_t fake_kfd_blits(void) { return atomic_load(&blit_dispatches); }

static bool find_kernel(uint64_t kernel_object, fake_kfd_kernel_body *body, void **ctx) {
  bool found = false;
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; i < MAX_KERNELS; i++) {
    if (kernels[i].kernel_object == kernel_object && kernels[i].body != NULL) {
      *body = kernels[i].body;
      *ctx = kernels[i].ctx;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&kernel_lock);
  return found;
}

enum blit_kind { BLIT_NONE, BLIT_COPY_ALIGNED, BLIT_COPY_MISALIGNED, BLIT_FILL };

static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/*
 * ROCr's blit kernels (GpuAgent::AssembleShader, AssembleTarget::AQL) are a zeroed 256-byte
 * amd_kernel_code_t followed by hand-assembled code. The header has version and machine fields 0,
 * kernel_code_entry_byte_offset 256, the kernarg-pointer user SGPR enabled, 2 user SGPRs, and
 * granulated register counts derived from each shader's fixed SGPR/VGPR budget:
 *   CopyAligned 32 SGPRs/12 VGPRs -> (3, 2); CopyMisaligned 23/10 -> (2, 2); Fill 19/8 -> (2, 1).
 * That triple tells the three apart on every ISA (the code bytes differ between gfx8/9/10).
 */
static enum blit_kind classify_blit(const uint8_t *k) {
  if (rd32(k) != 0 || rd32(k + 4) != 0 || rd32(k + 8) != 0 || rd32(k + 12) != 0) return BLIT_NONE;
  if (rd64(k + 16) != 256) return BLIT_NONE;
  uint32_t rsrc1 = rd32(k + 48), rsrc2 = rd32(k + 52), props = rd32(k + 56);
  if (((rsrc2 >> 1) & 0x1f) != 2 || ((props >> 3) & 1) != 1) return BLIT_NONE;
  unsigned vgprs = rsrc1 & 0x3f, sgprs = (rsrc1 >> 6) & 0xf;
  if (sgprs == 3 && vgprs == 2) return BLIT_COPY_ALIGNED;
  if (sgprs == 2 && vgprs == 2) return BLIT_COPY_MISALIGNED;
  if (sgprs == 2 && vgprs == 1) return BLIT_FILL;
  return BLIT_NONE;
}

/* Carries out a blit on the host. Kernarg layouts: BlitKernel::KernelArgs (amd_blit_kernel.h). */
static void run_blit(enum blit_kind kind, const uint8_t *args) {
  if (kind == BLIT_FILL) {
    uint64_t dst = rd64(args), end = rd64(args + 16);
    uint32_t value = rd32(args + 24);
    uint8_t *d = gpu_access(dst, end - dst, "fill destination");
    for (uint64_t off = 0; off + 4 <= end - dst; off += 4) memcpy(d + off, &value, 4);
    LOG("blit fill 0x%llx..0x%llx = 0x%x\n", (unsigned long long)dst, (unsigned long long)end,
        value);
    return;
  }
  /* Both copies: phase1 source/destination start at 0/8; the ends are phase4 (aligned, 64/72)
   * or phase2 (misaligned, 32/40). The phases in between only split the work among waves. */
  uint64_t src = rd64(args), dst = rd64(args + 8);
  uint64_t src_end = kind == BLIT_COPY_ALIGNED ? rd64(args + 64) : rd64(args + 32);
  uint64_t dst_end = kind == BLIT_COPY_ALIGNED ? rd64(args + 72) : rd64(args + 40);
  uint64_t size = src_end - src;
  if (dst_end - dst != size) {
    fprintf(stderr,
            "fake_kfd: inconsistent blit kernargs (src 0x%llx..0x%llx, dst 0x%llx..0x%llx)\n",
            (unsigned long long)src, (unsigned long long)src_end, (unsigned long long)dst,
            (unsigned long long)dst_end);
    abort();
  }
  memmove(gpu_access(dst, size, "copy destination"), gpu_access(src, size, "copy source"), size);
  LOG("blit copy 0x%llx -> 0x%llx, %llu bytes\n", (unsigned long long)src, (unsigned long long)dst,
      (unsigned long long)size);
}

/* ------------------------------------------------------------------------------------------------
 * Queues and the command processor.
 * ---------------------------------------------------------------------------------------------- */

/* AQL packet layout (hsa.h): all packets are 64 bytes; header at 0 (type in bits 0-7), completion
 * signal at 56 for every type used here. */
#define AQL_PACKET_SIZE 64
enum {
  PKT_VENDOR_SPECIFIC = 0,
  PKT_INVALID = 1,
  PKT_KERNEL_DISPATCH = 2,
  PKT_BARRIER_AND = 3,
  PKT_AGENT_DISPATCH = 4,
  PKT_BARRIER_OR = 5,
};

/* amd_signal_t (amd_hsa_signal.h): the hsa_signal_t handle is its address. */
#define SIGNAL_VALUE_OFFSET 8
#define SIGNAL_MAILBOX_OFFSET 16
#define SIGNAL_EVENT_ID_OFFSET 24
#define SIGNAL_START_TS_OFFSET 32
#define SIGNAL_END_TS_OFFSET 40

#define DOORBELL_NOT_RUNG UINT64_MAX

struct fake_queue {
  uint64_t id;
  uint32_t node;
  uint8_t *amd_queue; /* ROCr's amd_queue_t, found from the read pointer it passed */
  uint8_t *ring;
  uint64_t slots;
  _Atomic uint64_t *read_index;  /* ROCr's amd_queue_t.read_dispatch_id */
  _Atomic uint64_t *write_index; /* ROCr's amd_queue_t.write_dispatch_id */
  _Atomic uint64_t *doorbell;    /* a page of ours */
  pthread_t thread;
  atomic_bool stop;
  bool faulted; /* a kernel faulted: the queue is inactive and consumes nothing more */
  struct fake_queue *next;
};

/* amd_queue_t (amd_hsa_queue.h): write_dispatch_id at 56, read_dispatch_id at 128,
 * queue_inactive_signal at 192. */
#define AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET 56
#define AMD_QUEUE_READ_DISPATCH_ID_OFFSET 128
#define AMD_QUEUE_INACTIVE_SIGNAL_OFFSET 192

static atomic_bool held;

EXPORT void fake_kfd_hold(int on) { atomic_store(&held, on != 0); }

/* Every packet the command processors consumed, in order per queue. */
#define MAX_LOGGED_PACKETS 65536
static pthread_mutex_t packet_log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_kfd_packet packet_log[MAX_LOGGED_PACKETS];
static size_t packets_logged;

static void log_packet(const struct fake_queue *q, const uint8_t *pkt, unsigned type) {
  pthread_mutex_lock(&packet_log_lock);
  if (packets_logged < MAX_LOGGED_PACKETS) {
    struct fake_kfd_packet *e = &packet_log[packets_logged];
    e->queue = (uint64_t)(uintptr_t)q->amd_queue;
    e->type = type;
    e->completion_signal = rd64(pkt + 56);
    e->first_dependency = type == PKT_BARRIER_AND || type == PKT_BARRIER_OR ? rd64(pkt + 8) : 0;
  }
  packets_logged++;
  pthread_mutex_unlock(&packet_log_lock);
}

EXPORT size_t fake_kfd_packets(struct fake_kfd_packet *out, size_t from, size_t max) {
  pthread_mutex_lock(&packet_log_lock);
  size_t total = packets_logged;
  for (size_t i = 0; out != NULL && i < max && from + i < total && from + i < MAX_LOGGED_PACKETS; i++)
    out[i] = packet_log[from + i];
  pthread_mutex_unlock(&packet_log_lock);
  return total;
}

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_queue *queues;
static uint64_t next_queue_id = 1; /* ROCr treats QueueId 0 as "no queue" */

static int64_t signal_load(uint64_t handle) {
  return atomic_load((_Atomic int64_t *)(uintptr_t)(handle + SIGNAL_VALUE_OFFSET));
}

/* A signal's interrupt, as the command processor or a wave's s_sendmsg raises it: for a signal the
 * runtime waits on with events (one with an event mailbox), the event id is written to the mailbox and
 * the event raised. */
static void interrupt_signal(const uint8_t *s) {
  uint64_t mailbox_ptr = rd64(s + SIGNAL_MAILBOX_OFFSET);
  uint32_t event_id = rd32(s + SIGNAL_EVENT_ID_OFFSET);
  if (mailbox_ptr != 0) {
    atomic_store((_Atomic uint64_t *)(uintptr_t)mailbox_ptr, (uint64_t)event_id);
    raise_event_id(event_id);
  }
}

/* What the hardware does at the end of a packet with a completion signal. */
static void complete_signal(uint64_t handle, uint64_t start) {
  if (handle == 0) return;
  uint8_t *s = (uint8_t *)(uintptr_t)handle;
  uint64_t end = now_ns();
  memcpy(s + SIGNAL_START_TS_OFFSET, &start, sizeof start);
  memcpy(s + SIGNAL_END_TS_OFFSET, &end, sizeof end);
  atomic_fetch_sub((_Atomic int64_t *)(s + SIGNAL_VALUE_OFFSET), 1);
  interrupt_signal(s);
}

/* What ockl's __ockl_hsa_signal_store does when device code stores to a signal (the device's own
 * part of ROCm's hostcall doorbell): for a user signal (amd_signal_t.kind 1), the value is stored and,
 * when the signal has an event mailbox, the event id is written there and the interrupt raised
 * (s_sendmsg MSG_INTERRUPT). Returns 0, or -1 for a signal that is not a user signal. */
EXPORT int fake_kfd_signal_store(uint64_t handle, int64_t value) {
  uint8_t *s = (uint8_t *)(uintptr_t)handle;
  if (s == NULL || atomic_load((_Atomic int64_t *)s) != 1) return -1;
  atomic_store((_Atomic int64_t *)(s + SIGNAL_VALUE_OFFSET), value);
  interrupt_signal(s);
  return 0;
}

/* Waits, with back-off, until fn(arg) holds or the queue is being destroyed. */
static bool wait_until(struct fake_queue *q, bool (*fn)(const uint8_t *), const uint8_t *arg) {
  for (unsigned spins = 0; !fn(arg); spins++) {
    if (atomic_load(&q->stop)) return false;
    if (spins < 1000) sched_yield();
    else sleep_ns(50000);
  }
  return true;
}

static bool barrier_and_ready(const uint8_t *pkt) {
  for (int i = 0; i < 5; i++) {
    uint64_t dep = rd64(pkt + 8 + 8 * i);
    if (dep != 0 && signal_load(dep) != 0) return false;
  }
  return true;
}

static bool barrier_or_ready(const uint8_t *pkt) {
  bool any = false;
  for (int i = 0; i < 5; i++) {
    uint64_t dep = rd64(pkt + 8 + 8 * i);
    if (dep == 0) continue;
    any = true;
    if (signal_load(dep) == 0) return true;
  }
  return !any;
}

/* What the command processor does when a wave reports an error: the queue goes inactive, and
 * its inactive signal (an interrupt signal ROCr waits on) takes the error bits, which ROCr's
 * queue error handler turns into a status for the queue's callback (AqlQueue::
 * DynamicScratchHandler: 0x80000000, a debug trap, is HSA_STATUS_ERROR_EXCEPTION). */
static void fault_queue(struct fake_queue *q, int64_t error_bits) {
  q->faulted = true;
  uint64_t signal = q->amd_queue ? rd64(q->amd_queue + AMD_QUEUE_INACTIVE_SIGNAL_OFFSET) : 0;
  LOG("queue %llu: fault 0x%llx, inactive signal 0x%llx\n", (unsigned long long)q->id,
      (unsigned long long)error_bits, (unsigned long long)signal);
  if (signal == 0) return;
  uint8_t *sig = (uint8_t *)(uintptr_t)signal;
  atomic_store((_Atomic int64_t *)(sig + SIGNAL_VALUE_OFFSET), error_bits);
  interrupt_signal(sig);
}

/* Runs a dispatch; false when its kernel faulted (the packet does not complete). */
static bool run_dispatch(struct fake_queue *q, const uint8_t *pkt) {
  uint32_t grid_x = rd32(pkt + 12);
  uint64_t kernel_object = rd64(pkt + 32);
  uint64_t kernarg = rd64(pkt + 40);

  fake_kfd_kernel_body body;
  void *ctx;
  if (find_kernel(kernel_object, &body, &ctx)) {
    LOG("queue %llu: kernel 0x%llx grid %u -> host body\n", (unsigned long long)q->id,
        (unsigned long long)kernel_object, grid_x);
    int64_t error_bits = body(ctx, pkt, host_address(kernarg));
    if (error_bits != 0) {
      fault_queue(q, error_bits);
      return false;
    }
    return true;
  }
  /* Only memory the fake handed out or registered is read: a bad kernel object is counted as an
   * unregistered kernel rather than crashing the command processor. */
  enum blit_kind blit =
      known_range(kernel_object, 64) ? classify_blit(host_address(kernel_object)) : BLIT_NONE;
  if (blit != BLIT_NONE) {
    run_blit(blit, host_address(kernarg));
    atomic_fetch_add(&blit_dispatches, 1);
    return true;
  }
  LOG("queue %llu: kernel 0x%llx grid %u not registered, completing without running\n",
      (unsigned long long)q->id, (unsigned long long)kernel_object, grid_x);
  atomic_fetch_add(&unregistered_dispatches, 1);
  return true;
}

/* The command processor of one queue: consumes packets up to the doorbell's write index. */
static void *command_processor(void *arg) {
  struct fake_queue *q = arg;
  unsigned idle = 0;
  while (!atomic_load(&q->stop)) {
    uint64_t rung = atomic_load(q->doorbell);
    uint64_t read = atomic_load(q->read_index);
    if (rung == DOORBELL_NOT_RUNG || read > rung || q->faulted || atomic_load(&held)) {
      /* Nothing rung: spin briefly after activity, then poll gently. */
      if (++idle < 2000) sched_yield();
      else sleep_ns(100000);
      continue;
    }
    idle = 0;
    uint8_t *pkt = q->ring + (read % q->slots) * AQL_PACKET_SIZE;
    uint16_t header = atomic_load((_Atomic uint16_t *)pkt);
    unsigned type = header & 0xff;
    if (type == PKT_INVALID) {
      sched_yield(); /* the doorbell may run ahead of the header store */
      continue;
    }
    atomic_thread_fence(memory_order_acquire);
    uint64_t start = now_ns();
    log_packet(q, pkt, type);
    bool done = true;
    switch (type) {
      case PKT_KERNEL_DISPATCH:
        done = run_dispatch(q, pkt);
        break;
      case PKT_BARRIER_AND:
        done = wait_until(q, barrier_and_ready, pkt);
        break;
      case PKT_BARRIER_OR:
        done = wait_until(q, barrier_or_ready, pkt);
        break;
      case PKT_VENDOR_SPECIFIC:
        LOG("queue %llu: vendor-specific packet (format %u) consumed as a no-op\n",
            (unsigned long long)q->id, (unsigned)(pkt[2] | (pkt[3] << 8)));
        break;
      default:
        /* Vendor-specific (AMD PM4 indirect buffers: cache invalidations), agent dispatch and
         * anything else: nothing to do on coherent host memory. */
        break;
    }
    if (!done) continue; /* stopping, or the queue faulted */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t signal = rd64(pkt + 56);
    /* Release the slot and advance the read index before completing the signal, as a waiter
     * may reuse the slot as soon as it sees the signal. */
    atomic_store((_Atomic uint16_t *)pkt, (uint16_t)PKT_INVALID);
    atomic_store(q->read_index, read + 1);
    complete_signal(signal, start);
  }
  return NULL;
}

EXPORT HSAKMT_STATUS hsaKmtCreateQueue(HSAuint32 NodeId, HSA_QUEUE_TYPE Type,
                                       HSAuint32 QueuePercentage, HSA_QUEUE_PRIORITY Priority,
                                       void *QueueAddress, HSAuint64 QueueSizeInBytes,
                                       HsaEvent *Event, HsaQueueResource *QueueResource) {
  FAIL_POINT();
  (void)QueuePercentage;
  (void)Priority;
  (void)Event;
  if (!is_gpu_node(NodeId)) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  if (QueueResource == NULL || QueueAddress == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (Type != HSA_QUEUE_COMPUTE_AQL) {
    /* SDMA queues are refused: ROCr then copies with its blit kernels on AQL queues. */
    LOG("refusing queue of type %d\n", (int)Type);
    return HSAKMT_STATUS_NOT_SUPPORTED;
  }
  if (QueueSizeInBytes < AQL_PACKET_SIZE || QueueSizeInBytes % AQL_PACKET_SIZE != 0 ||
      QueueResource->Queue_read_ptr_aql == NULL || QueueResource->Queue_write_ptr_aql == NULL)
    return HSAKMT_STATUS_INVALID_PARAMETER;

  struct fake_queue *q = calloc(1, sizeof *q);
  if (q == NULL) return HSAKMT_STATUS_NO_MEMORY;
  void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    free(q);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  q->node = NodeId;
  q->amd_queue = (uint8_t *)QueueResource->Queue_read_ptr_aql - AMD_QUEUE_READ_DISPATCH_ID_OFFSET;
  if ((uint8_t *)QueueResource->Queue_write_ptr_aql != q->amd_queue + AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET) {
    LOG("queue pointers are not those of an amd_queue_t: faults cannot be reported\n");
    q->amd_queue = NULL;
  }
  q->ring = QueueAddress;
  q->slots = QueueSizeInBytes / AQL_PACKET_SIZE;
  q->read_index = (_Atomic uint64_t *)QueueResource->Queue_read_ptr_aql;
  q->write_index = (_Atomic uint64_t *)QueueResource->Queue_write_ptr_aql;
  q->doorbell = page;
  atomic_store(q->doorbell, DOORBELL_NOT_RUNG);
  atomic_store(&q->stop, false);

  pthread_mutex_lock(&queue_lock);
  q->id = next_queue_id++;
  if (pthread_create(&q->thread, NULL, command_processor, q) != 0) {
    pthread_mutex_unlock(&queue_lock);
    munmap(page, 4096);
    free(q);
    return HSAKMT_STATUS_OUT_OF_RESOURCES;
  }
  q->next = queues;
  queues = q;
  pthread_mutex_unlock(&queue_lock);

  QueueResource->QueueId = q->id;
  QueueResource->Queue_DoorBell_aql = (HSAuint64 *)page;
  LOG("queue %llu: %llu slots at %p\n", (unsigned long long)q->id, (unsigned long long)q->slots,
      QueueAddress);
  return HSAKMT_STATUS_SUCCESS;
}

EXPORT HSAKMT_STATUS hsaKmtDestroyQueue(HSA_QUEUEID QueueId) {
  FAIL_POINT();
  pthread_mutex_lock(&queue_lock);
  struct fake_queue **link = &queues;
  while (*link != NULL && (*link)->id != QueueId) link = &(*link)->next;
  struct fake_queue *q = *link;
  if (q != NULL) *link = q->next;
  pthread_mutex_unlock(&queue_lock);
  if (q == NULL) return HSAKMT_STATUS_INVALID_PARAMETER;
  atomic_store(&q->stop, true);
  pthread_join(q->thread, NULL);
  munmap((void *)q->doorbell, 4096);
  free(q);
  return HSAKMT_STATUS_SUCCESS;
}

static bool queue_exists(HSA_QUEUEID QueueId) {
  pthread_mutex_lock(&queue_lock);
  struct fake_queue *q = queues;
  while (q != NULL && q->id != QueueId) q = q->next;
  pthread_mutex_unlock(&queue_lock);
  return q != NULL;
}

EXPORT HSAKMT_STATUS hsaKmtUpdateQueue(HSA_QUEUEID QueueId, HSAuint32 QueuePercentage,
                                       HSA_QUEUE_PRIORITY Priority, void *QueueAddress,
                                       HSAuint64 QueueSize, HsaEvent *Event) {
  FAIL_POINT();
  (void)QueuePercentage;
  (void)Priority;
  (void)QueueAddress;
  (void)QueueSize;
  (void)Event;
  return queue_exists(QueueId) ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_INVALID_PARAMETER;
}

EXPORT HSAKMT_STATUS hsaKmtSetQueueCUMask(HSA_QUEUEID QueueId, HSAuint32 CUMaskCount,
                                          HSAuint32 *QueueCUMask) {
  FAIL_POINT();
  (void)CUMaskCount;
  (void)QueueCUMask;
  return queue_exists(QueueId) ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_INVALID_PARAMETER;
}

EXPORT HSAKMT_STATUS hsaKmtAllocQueueGWS(HSA_QUEUEID QueueId, HSAuint32 nGWS, HSAuint32 *firstGWS) {
  FAIL_POINT();
  (void)QueueId;
  (void)nGWS;
  (void)firstGWS;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}
