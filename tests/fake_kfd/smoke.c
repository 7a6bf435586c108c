/*
 * Smoke test of the fake kernel-driver thunk (fake_hsakmt.c) under the real ROCr.
 *
 * Build and run (one process per scenario: ROCr is a per-process singleton):
 *   sh scripts/build-fake-kfd.sh target/fake-kfd
 *   LD_LIBRARY_PATH=target/fake-kfd target/fake-kfd/fake-kfd-smoke \
 *       tests/data/amdgpu/cuda_module-gfx90a.hsaco
 *   FAKE_KFD_GPU=gfx1030 LD_LIBRARY_PATH=target/fake-kfd target/fake-kfd/fake-kfd-smoke \
 *       tests/data/amdgpu/cuda_module-gfx1030.hsaco
 *
 * The runtime is opened with dlopen by its soname; the HSA headers only supply the types. Prints
 * one line per step and exits 0 only if every step passed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "fake_kfd.h"

/* ---- the HSA functions used, looked up with dlsym ---- */
#define HSA_FUNCTIONS(X)                                                                           \
  X(hsa_init)                                                                                      \
  X(hsa_shut_down)                                                                                 \
  X(hsa_status_string)                                                                             \
  X(hsa_iterate_agents)                                                                            \
  X(hsa_agent_get_info)                                                                            \
  X(hsa_agent_iterate_isas)                                                                        \
  X(hsa_isa_get_info_alt)                                                                          \
  X(hsa_amd_agent_iterate_memory_pools)                                                            \
  X(hsa_amd_memory_pool_get_info)                                                                  \
  X(hsa_amd_memory_pool_allocate)                                                                  \
  X(hsa_amd_memory_pool_free)                                                                      \
  X(hsa_amd_agents_allow_access)                                                                   \
  X(hsa_memory_copy)                                                                               \
  X(hsa_amd_memory_async_copy)                                                                     \
  X(hsa_amd_memory_fill)                                                                           \
  X(hsa_amd_memory_lock)                                                                           \
  X(hsa_amd_memory_unlock)                                                                         \
  X(hsa_amd_pointer_info)                                                                          \
  X(hsa_signal_create)                                                                             \
  X(hsa_signal_destroy)                                                                            \
  X(hsa_signal_wait_scacquire)                                                                     \
  X(hsa_signal_store_screlease)                                                                    \
  X(hsa_signal_load_relaxed)                                                                       \
  X(hsa_code_object_reader_create_from_memory)                                                     \
  X(hsa_code_object_reader_destroy)                                                                \
  X(hsa_executable_create_alt)                                                                     \
  X(hsa_executable_load_agent_code_object)                                                         \
  X(hsa_executable_freeze)                                                                         \
  X(hsa_executable_destroy)                                                                        \
  X(hsa_executable_iterate_agent_symbols)                                                          \
  X(hsa_executable_get_symbol_by_name)                                                             \
  X(hsa_executable_symbol_get_info)                                                                \
  X(hsa_queue_create)                                                                              \
  X(hsa_queue_destroy)                                                                             \
  X(hsa_queue_add_write_index_screlease)                                                           \
  X(hsa_queue_load_read_index_scacquire)

#define DECLARE(name) static __typeof__(name) *p_##name;
HSA_FUNCTIONS(DECLARE)

/* ---- reporting ---- */
static int failures;

static void step(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", ok ? "ok  " : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
  if (!ok) failures++;
}

/* Whether `signal` reached 0: its operation completed (waits as long as it takes). */
static int completed(hsa_signal_t signal) {
  return p_hsa_signal_wait_scacquire(signal, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                     HSA_WAIT_STATE_BLOCKED) == 0;
}

/* The status's name: the text of hsa_status_string up to its colon. */
static const char *status_text(hsa_status_t s) {
  static char name[64];
  const char *text = NULL;
  if (p_hsa_status_string == NULL || p_hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
    return "?";
  size_t n = strcspn(text, ":");
  snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), text);
  return name;
}

#define CHECK(call, what)                                                                          \
  do {                                                                                             \
    hsa_status_t s_ = (call);                                                                      \
    step(s_ == HSA_STATUS_SUCCESS, "%s (0x%x %s)", what, (unsigned)s_, status_text(s_));    \
    if (s_ != HSA_STATUS_SUCCESS) goto out;                                                        \
  } while (0)

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- agents and pools ---- */
struct agents {
  hsa_agent_t cpu, gpu;
  int ncpu, ngpu;
};

static hsa_status_t on_agent(hsa_agent_t agent, void *data) {
  struct agents *a = data;
  hsa_device_type_t type;
  p_hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
  if (type == HSA_DEVICE_TYPE_CPU && a->ncpu++ == 0) a->cpu = agent;
  if (type == HSA_DEVICE_TYPE_GPU && a->ngpu++ == 0) a->gpu = agent;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t on_isa(hsa_isa_t isa, void *data) {
  int *count = data;
  uint32_t len = 0;
  char name[256] = {0};
  p_hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len);
  if (len < sizeof name) p_hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name);
  printf("     ISA %s\n", name);
  (*count)++;
  return HSA_STATUS_SUCCESS;
}

struct pool_search {
  uint32_t want_flags;
  hsa_amd_memory_pool_t pool;
  int found;
};

static hsa_status_t on_pool(hsa_amd_memory_pool_t pool, void *data) {
  struct pool_search *ps = data;
  hsa_amd_segment_t segment;
  uint32_t flags = 0;
  bool alloc = false;
  p_hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  p_hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  p_hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & ps->want_flags) == ps->want_flags && !ps->found) {
    ps->pool = pool;
    ps->found = 1;
  }
  return HSA_STATUS_SUCCESS;
}

/* ---- code object symbols ---- */
#define MAX_KD 16
struct symbols {
  char kd[MAX_KD][256];
  int nkd;
  int total;
};

static hsa_status_t on_symbol(hsa_executable_t exe, hsa_agent_t agent, hsa_executable_symbol_t sym,
                              void *data) {
  (void)exe;
  (void)agent;
  struct symbols *s = data;
  uint32_t len = 0;
  char name[256] = {0};
  p_hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len);
  if (len >= sizeof name) return HSA_STATUS_SUCCESS;
  p_hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name);
  s->total++;
  size_t n = strlen(name);
  if (n > 3 && strcmp(name + n - 3, ".kd") == 0 && s->nkd < MAX_KD)
    snprintf(s->kd[s->nkd++], sizeof s->kd[0], "%s", name);
  return HSA_STATUS_SUCCESS;
}

/* st_value of a symbol in the ELF file's .symtab, or UINT64_MAX. */
static uint64_t elf_symbol(const unsigned char *image, size_t size, const char *want) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
  if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return UINT64_MAX;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    const Elf64_Sym *syms = (const Elf64_Sym *)(image + sh[i].sh_offset);
    const char *strtab = (const char *)(image + sh[sh[i].sh_link].sh_offset);
    for (size_t j = 0; j < sh[i].sh_size / sizeof *syms; j++)
      if (strcmp(strtab + syms[j].st_name, want) == 0) return syms[j].st_value;
  }
  return UINT64_MAX;
}

/* ---- the host body of a kernel ---- */
struct body_record {
  int calls;
  uint32_t grid, workgroup;
  uint64_t first_arg;
};

static int64_t kernel_body(void *ctx, const void *packet, const void *kernarg) {
  const hsa_kernel_dispatch_packet_t *p = packet;
  struct body_record *r = ctx;
  r->calls++;
  r->grid = p->grid_size_x;
  r->workgroup = p->workgroup_size_x;
  memcpy(&r->first_arg, kernarg, sizeof r->first_arg);
  return 0;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31u + seed);
}

static int check_pattern(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(i * 31u + seed)) return 0;
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CODE_OBJECT.hsaco\n", argv[0]);
    return 2;
  }
  const char *want_gpu = getenv("FAKE_KFD_GPU");
  if (want_gpu == NULL || want_gpu[0] == '\0') want_gpu = "gfx90a";
  const uint32_t want_wave = strcmp(want_gpu, "gfx1030") == 0 ? 32 : 64;
  double t0 = seconds();

  void *hsa = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_LOCAL);
  step(hsa != NULL, "dlopen libhsa-runtime64.so.1%s%s", hsa ? "" : ": ", hsa ? "" : dlerror());
  if (hsa == NULL) return 1;
#define LOOKUP(name)                                                                               \
  p_##name = (__typeof__(name) *)dlsym(hsa, #name);                                                \
  if (p_##name == NULL) {                                                                          \
    step(0, "dlsym %s", #name);                                                                    \
    return 1;                                                                                      \
  }
  HSA_FUNCTIONS(LOOKUP)

  /* Everything allocated below, released at `out`. */
  unsigned char *image = NULL, *host_a = NULL, *host_b = NULL, *locked = NULL;
  void *dev = NULL, *fine = NULL, *kernarg = NULL;
  hsa_signal_t signal = {0};
  hsa_queue_t *queue = NULL;
  hsa_code_object_reader_t reader = {0};
  hsa_executable_t exe = {0};
  int hsa_up = 0;
  void *thunk = NULL;

  CHECK(p_hsa_init(), "hsa_init");
  hsa_up = 1;
  step(1, "hsa_init took %.3f s", seconds() - t0);

  /* The fake's test hooks, from the thunk ROCr loaded. */
  thunk = dlopen("libhsakmt.so.1", RTLD_NOW | RTLD_NOLOAD);
  __typeof__(fake_kfd_set_kernel) *set_kernel =
      thunk ? (__typeof__(fake_kfd_set_kernel) *)dlsym(thunk, "fake_kfd_set_kernel") : NULL;
  __typeof__(fake_kfd_dispatches) *dispatches =
      thunk ? (__typeof__(fake_kfd_dispatches) *)dlsym(thunk, "fake_kfd_dispatches") : NULL;
  __typeof__(fake_kfd_blits) *blits =
      thunk ? (__typeof__(fake_kfd_blits) *)dlsym(thunk, "fake_kfd_blits") : NULL;
  __typeof__(fake_kfd_fail_next) *fail_next =
      thunk ? (__typeof__(fake_kfd_fail_next) *)dlsym(thunk, "fake_kfd_fail_next") : NULL;
  step(set_kernel && dispatches && blits && fail_next,
       "the loaded libhsakmt.so.1 is the fake (test hooks found)");
  if (!set_kernel || !dispatches || !blits || !fail_next) goto out;

  /* Agents. */
  struct agents ag = {0};
  CHECK(p_hsa_iterate_agents(on_agent, &ag), "hsa_iterate_agents");
  char gpu_name[64] = {0};
  uint32_t wave = 0;
  if (ag.ngpu > 0) {
    p_hsa_agent_get_info(ag.gpu, HSA_AGENT_INFO_NAME, gpu_name);
    p_hsa_agent_get_info(ag.gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wave);
  }
  step(ag.ncpu == 1 && ag.ngpu == 1, "agents: %d CPU, %d GPU", ag.ncpu, ag.ngpu);
  step(strcmp(gpu_name, want_gpu) == 0 && wave == want_wave, "GPU agent %s, wavefront %u",
       gpu_name, wave);
  if (ag.ngpu != 1) goto out;
  int nisa = 0;
  CHECK(p_hsa_agent_iterate_isas(ag.gpu, on_isa, &nisa), "hsa_agent_iterate_isas");
  step(nisa >= 1, "GPU has %d ISA(s)", nisa);

  /* Pools. */
  struct pool_search coarse = {HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, {0}, 0};
  struct pool_search kernarg_pool = {
      HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
      {0}, 0};
  CHECK(p_hsa_amd_agent_iterate_memory_pools(ag.gpu, on_pool, &coarse), "GPU pools");
  CHECK(p_hsa_amd_agent_iterate_memory_pools(ag.cpu, on_pool, &kernarg_pool), "CPU pools");
  step(coarse.found, "coarse-grained global pool on the GPU");
  step(kernarg_pool.found, "fine-grained kernarg pool on the CPU");
  if (!coarse.found || !kernarg_pool.found) goto out;

  /* Device memory and synchronous copies through malloc'd (unregistered) host memory. */
  const size_t n = (1u << 20) + 3;
  host_a = malloc(n + 8);
  host_b = malloc(n + 8);
  if (host_a == NULL || host_b == NULL) goto out;
  CHECK(p_hsa_amd_memory_pool_allocate(coarse.pool, n + 8, 0, &dev), "allocate device memory");
  fill_pattern(host_a, n, 7);
  memset(host_b, 0, n);
  unsigned long long blits_before = (unsigned long long)blits();
  CHECK(p_hsa_memory_copy(dev, host_a, n), "hsa_memory_copy host->device");
  CHECK(p_hsa_memory_copy(host_b, dev, n), "hsa_memory_copy device->host");
  step(check_pattern(host_b, n, 7), "bytes survive host->device->host (%zu bytes, %llu blits)", n,
       (unsigned long long)blits() - blits_before);
  /* Misaligned: source and destination differ in their low two address bits. */
  fill_pattern(host_a + 1, n - 1, 9);
  memset(host_b, 0, n);
  CHECK(p_hsa_memory_copy((char *)dev + 2, host_a + 1, n - 1), "misaligned hsa_memory_copy");
  CHECK(p_hsa_memory_copy(host_b + 3, (char *)dev + 2, n - 1), "misaligned copy back");
  step(check_pattern(host_b + 3, n - 1, 9), "bytes survive misaligned copies");

  hsa_amd_pointer_info_t info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK(p_hsa_amd_pointer_info(dev, &info, NULL, NULL, NULL), "hsa_amd_pointer_info(device)");
  step(info.type == HSA_EXT_POINTER_TYPE_HSA && info.agentOwner.handle == ag.gpu.handle &&
           info.agentBaseAddress == dev,
       "pointer info: HSA memory owned by the GPU");

  /* Asynchronous copies through fine-grained system memory the GPU may access. */
  CHECK(p_hsa_amd_memory_pool_allocate(kernarg_pool.pool, n, 0, &fine), "allocate system memory");
  CHECK(p_hsa_amd_agents_allow_access(1, &ag.gpu, NULL, fine), "allow the GPU access");
  CHECK(p_hsa_signal_create(1, 0, NULL, &signal), "hsa_signal_create");
  fill_pattern(fine, n, 11);
  CHECK(p_hsa_amd_memory_async_copy(dev, ag.gpu, fine, ag.cpu, n, 0, NULL, signal),
        "hsa_amd_memory_async_copy host->device");
  step(completed(signal),
       "completion signal reached 0");
  memset(fine, 0, n);
  p_hsa_signal_store_screlease(signal, 1);
  CHECK(p_hsa_amd_memory_async_copy(fine, ag.cpu, dev, ag.gpu, n, 0, NULL, signal),
        "hsa_amd_memory_async_copy device->host");
  step(completed(signal) &&
           check_pattern(fine, n, 11),
       "async copies carry the bytes");

  /* A copy that waits for a dependency signal (ROCr puts a barrier-AND packet before it). */
  hsa_signal_t dep = {0};
  CHECK(p_hsa_signal_create(1, 0, NULL, &dep), "create a dependency signal");
  memset(fine, 0, n);
  p_hsa_signal_store_screlease(signal, 1);
  CHECK(p_hsa_amd_memory_async_copy(fine, ag.cpu, dev, ag.gpu, n, 1, &dep, signal),
        "async copy after a dependency");
  hsa_signal_value_t early = p_hsa_signal_wait_scacquire(
      signal, HSA_SIGNAL_CONDITION_LT, 1, 20000000 /* 20 ms at 1 GHz */, HSA_WAIT_STATE_BLOCKED);
  p_hsa_signal_store_screlease(dep, 0);
  step(early == 1 && completed(signal) &&
           check_pattern(fine, n, 11),
       "the copy waited for its dependency, then ran");
  p_hsa_signal_destroy(dep);

  /* Locked (registered) user memory. */
  locked = malloc(n);
  if (locked == NULL) goto out;
  void *agent_ptr = NULL;
  CHECK(p_hsa_amd_memory_lock(locked, n, &ag.gpu, 1, &agent_ptr), "hsa_amd_memory_lock");
  printf("     locked %p, agent address %p (%s)\n", (void *)locked, agent_ptr,
         agent_ptr == locked ? "same" : "distinct");
  memset(locked, 0, n);
  p_hsa_signal_store_screlease(signal, 1);
  CHECK(p_hsa_amd_memory_async_copy(agent_ptr, ag.cpu, dev, ag.gpu, n, 0, NULL, signal),
        "async copy device->locked memory");
  step(completed(signal) &&
           check_pattern(locked, n, 11),
       "locked memory received the bytes");
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK(p_hsa_amd_pointer_info(locked, &info, NULL, NULL, NULL), "hsa_amd_pointer_info(locked)");
  step(info.type == HSA_EXT_POINTER_TYPE_LOCKED && info.hostBaseAddress == locked &&
           info.agentBaseAddress == agent_ptr,
       "pointer info: locked memory, host %p agent %p", info.hostBaseAddress,
       info.agentBaseAddress);
  CHECK(p_hsa_amd_memory_unlock(locked), "hsa_amd_memory_unlock");

  /* A fill (ROCr's fill blit kernel); the device memory still holds the pattern of seed 11. */
  CHECK(p_hsa_amd_memory_fill(dev, 0xdeadbeefu, 1000), "hsa_amd_memory_fill");
  CHECK(p_hsa_memory_copy(host_b, dev, 4004), "copy the fill back");
  int filled = 1;
  for (int i = 0; i < 1000; i++) {
    uint32_t w;
    memcpy(&w, host_b + 4 * i, 4);
    filled &= w == 0xdeadbeefu;
  }
  for (int i = 4000; i < 4004; i++) /* beyond the fill: still the async copy's pattern */
    filled &= host_b[i] == (unsigned char)(i * 31u + 11);
  step(filled, "the fill wrote 1000 words and stopped there");

  /* Code object. */
  FILE *f = fopen(argv[1], "rb");
  step(f != NULL, "open %s", argv[1]);
  if (f == NULL) goto out;
  fseek(f, 0, SEEK_END);
  long image_size = ftell(f);
  fseek(f, 0, SEEK_SET);
  image = malloc((size_t)image_size);
  size_t got = image ? fread(image, 1, (size_t)image_size, f) : 0;
  fclose(f);
  if (got != (size_t)image_size) goto out;
  const uint64_t client_value = elf_symbol(image, got, "__llvm_libc_rpc_client");
  const uint64_t object_value = elf_symbol(image, got, "omprpc_client_object");
  step(client_value != UINT64_MAX && object_value != UINT64_MAX,
       "ELF: __llvm_libc_rpc_client at 0x%llx, omprpc_client_object at 0x%llx",
       (unsigned long long)client_value, (unsigned long long)object_value);

  CHECK(p_hsa_code_object_reader_create_from_memory(image, (size_t)image_size, &reader),
        "hsa_code_object_reader_create_from_memory");
  CHECK(p_hsa_executable_create_alt(HSA_PROFILE_BASE, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                    &exe),
        "hsa_executable_create_alt");
  blits_before = (unsigned long long)blits();
  CHECK(p_hsa_executable_load_agent_code_object(exe, ag.gpu, reader, NULL, NULL),
        "hsa_executable_load_agent_code_object");
  CHECK(p_hsa_executable_freeze(exe, NULL), "hsa_executable_freeze");
  printf("     loading used %llu blit kernels\n", (unsigned long long)blits() - blits_before);
  struct symbols syms = {0};
  CHECK(p_hsa_executable_iterate_agent_symbols(exe, ag.gpu, on_symbol, &syms),
        "hsa_executable_iterate_agent_symbols");
  step(syms.nkd >= 1, "%d symbols, %d kernel descriptors", syms.total, syms.nkd);
  hsa_executable_symbol_t kd_sym[MAX_KD];
  for (int i = 0; i < syms.nkd; i++) {
    hsa_status_t s = p_hsa_executable_get_symbol_by_name(exe, syms.kd[i], &ag.gpu, &kd_sym[i]);
    step(s == HSA_STATUS_SUCCESS, "get_symbol_by_name %s (0x%x)", syms.kd[i], (unsigned)s);
    if (s != HSA_STATUS_SUCCESS) goto out;
  }
  hsa_executable_symbol_t client_sym, local_sym;
  CHECK(p_hsa_executable_get_symbol_by_name(exe, "__llvm_libc_rpc_client", &ag.gpu, &client_sym),
        "get_symbol_by_name __llvm_libc_rpc_client");
  hsa_status_t local_status =
      p_hsa_executable_get_symbol_by_name(exe, "omprpc_client_object", &ag.gpu, &local_sym);
  step(local_status == HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
       "the local omprpc_client_object is not found (0x%x)", (unsigned)local_status);
  uint64_t client_address = 0, client_pointer = 0;
  p_hsa_executable_symbol_get_info(client_sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                                   &client_address);
  CHECK(p_hsa_memory_copy(&client_pointer, (void *)(uintptr_t)client_address, 8),
        "read __llvm_libc_rpc_client from device memory");
  const uint64_t expected = client_address - client_value + object_value;
  step(client_pointer == expected,
       "__llvm_libc_rpc_client at 0x%llx holds 0x%llx (expected 0x%llx: the client object)",
       (unsigned long long)client_address, (unsigned long long)client_pointer,
       (unsigned long long)expected);

  /* A dispatch through a user queue. */
  /* An error path: the thunk refuses the queue once. */
  fail_next("hsaKmtCreateQueue"); /* ROCr reports it on stderr: "HSA exception: ..." */
  hsa_status_t refused = p_hsa_queue_create(ag.gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL,
                                            UINT32_MAX, UINT32_MAX, &queue);
  step(refused != HSA_STATUS_SUCCESS,
       "hsa_queue_create fails when hsaKmtCreateQueue does (0x%x %s)", (unsigned)refused,
       status_text(refused));
  if (refused == HSA_STATUS_SUCCESS) goto out;
  queue = NULL;
  CHECK(p_hsa_queue_create(ag.gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX,
                           &queue),
        "hsa_queue_create");
  uint64_t kernel_object[2] = {0, 0};
  uint32_t kernarg_size = 0;
  for (int i = 0; i < 2 && i < syms.nkd; i++)
    p_hsa_executable_symbol_get_info(kd_sym[i], HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                     &kernel_object[i]);
  p_hsa_executable_symbol_get_info(
      kd_sym[0], HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size);
  struct body_record record = {0};
  step(set_kernel(kernel_object[0], kernel_body, &record) == 0,
       "registered a host body for %s (kernel object 0x%llx)", syms.kd[0],
       (unsigned long long)kernel_object[0]);
  CHECK(p_hsa_amd_memory_pool_allocate(kernarg_pool.pool, 4096, 0, &kernarg), "allocate kernargs");
  const uint64_t marker = 0x0123456789abcdefull;
  memcpy(kernarg, &marker, sizeof marker);
  unsigned long long unregistered_before = (unsigned long long)dispatches();
  for (int k = 0; k < 2 && kernel_object[k] != 0; k++) {
    p_hsa_signal_store_screlease(signal, 1);
    uint64_t index = p_hsa_queue_add_write_index_screlease(queue, 1);
    hsa_kernel_dispatch_packet_t *pkt =
        (hsa_kernel_dispatch_packet_t *)queue->base_address + (index & (queue->size - 1));
    memset((char *)pkt + 4, 0, sizeof *pkt - 4);
    pkt->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    pkt->workgroup_size_x = 64;
    pkt->workgroup_size_y = pkt->workgroup_size_z = 1;
    pkt->grid_size_x = 256;
    pkt->grid_size_y = pkt->grid_size_z = 1;
    pkt->kernel_object = kernel_object[k];
    pkt->kernarg_address = kernarg;
    pkt->completion_signal = signal;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (1 << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    uint32_t word = header | ((uint32_t)pkt->setup << 16);
    __atomic_store_n((uint32_t *)pkt, word, __ATOMIC_RELEASE);
    p_hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    step(completed(signal),
         "dispatch %d of %s completed", k, syms.kd[k]);
  }
  step(record.calls == 1 && record.grid == 256 && record.workgroup == 64 &&
           record.first_arg == marker,
       "host body ran once: grid %u, workgroup %u, kernarg[0] 0x%llx (kernarg size %u)",
       record.grid, record.workgroup, (unsigned long long)record.first_arg, kernarg_size);
  if (syms.nkd >= 2)
    step((unsigned long long)dispatches() - unregistered_before == 1,
         "unregistered kernel completed without running (counted %llu)",
         (unsigned long long)dispatches() - unregistered_before);
  step(p_hsa_queue_load_read_index_scacquire(queue) >= 1, "queue read index advanced to %llu",
       (unsigned long long)p_hsa_queue_load_read_index_scacquire(queue));

out:
  if (queue) p_hsa_queue_destroy(queue);
  if (exe.handle) p_hsa_executable_destroy(exe);
  if (reader.handle) p_hsa_code_object_reader_destroy(reader);
  if (signal.handle) p_hsa_signal_destroy(signal);
  if (kernarg) p_hsa_amd_memory_pool_free(kernarg);
  if (fine) p_hsa_amd_memory_pool_free(fine);
  if (dev) p_hsa_amd_memory_pool_free(dev);
  if (hsa_up) {
    hsa_status_t s = p_hsa_shut_down();
    step(s == HSA_STATUS_SUCCESS, "hsa_shut_down (0x%x)", (unsigned)s);
  }
  if (thunk) dlclose(thunk);
  free(image);
  free(host_a);
  free(host_b);
  free(locked);
  printf("%s: %d failure(s), %.3f s\n", failures ? "FAILED" : "PASSED", failures, seconds() - t0);
  return failures ? 1 : 0;
}
