/* omprpc's device library: the C library calls of unchanged OpenMP programs that are carried out on the
 * host (the other files of device/ hold those that run on the device).
 *
 * Built for every GPU target omprpc serves (scripts/build-device-lib.sh) into libomprpc-device.a,
 * which a program links with `-lomprpc-device`: its target regions' printf, puts, stdio, malloc
 * family, exit, abort and assert then reach the host through omprpc's RPC server, with the client of
 * omprpc_device.h. clang-16 turns a device printf into __llvm_omp_vprintf(format, args, size), with
 * the arguments in a struct laid out after C's default promotions at natural alignment; that struct
 * travels to the host as it is, with the bytes of each %s string, and the host's own vfprintf
 * prints it. The other calls are undefined symbols of the device link that this library defines.
 *
 * Only the GPU passes define anything: the host's pass (and the host device, whose target regions
 * call the host's C library directly) gets an empty object. Tests build this file for the host device
 * with OMPRPC_LIBC_PREFIX defined, which names every function omprpc_libc_<name> instead, so that the
 * library's code runs through omprpc's host device without replacing the host's C library. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED

#include "omprpc_device.h"

/* The C library's stream type, as the program's headers name it; only its address matters here. */
typedef struct _IO_FILE omprpc_libc_FILE_;
#define OMPRPC_LIBC_EOF (-1)

#ifdef __cplusplus
extern "C" {
#endif

#pragma omp begin declare target

/* A declare-target function that names stdin, stdout or stderr reads these; a target region itself
 * gets the host's own pointers from the host (clang passes them in by value), which the host knows. */
omprpc_libc_FILE_ *OMPRPC_LIBC_(stdin) = (omprpc_libc_FILE_ *)OMPRPC_STDIN;
omprpc_libc_FILE_ *OMPRPC_LIBC_(stdout) = (omprpc_libc_FILE_ *)OMPRPC_STDOUT;
omprpc_libc_FILE_ *OMPRPC_LIBC_(stderr) = (omprpc_libc_FILE_ *)OMPRPC_STDERR;

static inline omprpc_file *omprpc_libc_stream_(omprpc_libc_FILE_ *stream) { return (omprpc_file *)stream; }

/* ---- printf ---- */

int OMPRPC_LIBC_(__llvm_omp_vprintf)(const char *format, void *args, uint32_t size) {
  return omprpc_vprintf_struct_(OMPRPC_STDOUT, format, args, size);
}

/* fprintf's form of the same, for the opt-in header omprpc_libc.h. */
int omprpc_libc_vfprintf_struct(omprpc_libc_FILE_ *stream, const char *format, void *args, uint32_t size) {
  return omprpc_vprintf_struct_(omprpc_libc_stream_(stream), format, args, size);
}

/* ---- Streams ---- */

int OMPRPC_LIBC_(puts)(const char *s) { return omprpc_puts(s) < 0 ? OMPRPC_LIBC_EOF : 0; }

int OMPRPC_LIBC_(fputs)(const char *s, omprpc_libc_FILE_ *stream) {
  return omprpc_fputs(s, omprpc_libc_stream_(stream)) < 0 ? OMPRPC_LIBC_EOF : 0;
}

int OMPRPC_LIBC_(fputc)(int c, omprpc_libc_FILE_ *stream) {
  unsigned char byte = (unsigned char)c;
  return omprpc_fwrite(&byte, 1, 1, omprpc_libc_stream_(stream)) == 1 ? byte : OMPRPC_LIBC_EOF;
}

int OMPRPC_LIBC_(putc)(int c, omprpc_libc_FILE_ *stream) { return OMPRPC_LIBC_(fputc)(c, stream); }

int OMPRPC_LIBC_(putchar)(int c) { return OMPRPC_LIBC_(fputc)(c, (omprpc_libc_FILE_ *)OMPRPC_STDOUT); }

size_t OMPRPC_LIBC_(fwrite)(const void *data, size_t size, size_t count, omprpc_libc_FILE_ *stream) {
  return omprpc_fwrite(data, size, count, omprpc_libc_stream_(stream));
}

size_t OMPRPC_LIBC_(fread)(void *buffer, size_t size, size_t count, omprpc_libc_FILE_ *stream) {
  return omprpc_fread(buffer, size, count, omprpc_libc_stream_(stream));
}

char *OMPRPC_LIBC_(fgets)(char *s, int count, omprpc_libc_FILE_ *stream) {
  return omprpc_fgets(s, count, omprpc_libc_stream_(stream));
}

omprpc_libc_FILE_ *OMPRPC_LIBC_(fopen)(const char *path, const char *mode) {
  return (omprpc_libc_FILE_ *)omprpc_fopen(path, mode);
}

int OMPRPC_LIBC_(fclose)(omprpc_libc_FILE_ *stream) {
  return omprpc_fclose(omprpc_libc_stream_(stream)) < 0 ? OMPRPC_LIBC_EOF : 0;
}

int OMPRPC_LIBC_(fflush)(omprpc_libc_FILE_ *stream) { return omprpc_fflush(omprpc_libc_stream_(stream)); }

int OMPRPC_LIBC_(fseek)(omprpc_libc_FILE_ *stream, long offset, int whence) {
  return omprpc_fseek(omprpc_libc_stream_(stream), offset, whence);
}

long OMPRPC_LIBC_(ftell)(omprpc_libc_FILE_ *stream) { return omprpc_ftell(omprpc_libc_stream_(stream)); }

int OMPRPC_LIBC_(feof)(omprpc_libc_FILE_ *stream) { return omprpc_feof(omprpc_libc_stream_(stream)); }

int OMPRPC_LIBC_(ferror)(omprpc_libc_FILE_ *stream) { return omprpc_ferror(omprpc_libc_stream_(stream)); }

int OMPRPC_LIBC_(remove)(const char *path) { return omprpc_remove(path); }

int OMPRPC_LIBC_(fgetc)(omprpc_libc_FILE_ *stream) { return omprpc_fgetc(omprpc_libc_stream_(stream)); }
int OMPRPC_LIBC_(getc)(omprpc_libc_FILE_ *stream) { return omprpc_fgetc(omprpc_libc_stream_(stream)); }
int OMPRPC_LIBC_(getchar)(void) { return omprpc_fgetc(OMPRPC_STDIN); }
int OMPRPC_LIBC_(ungetc)(int c, omprpc_libc_FILE_ *stream) { return omprpc_ungetc(c, omprpc_libc_stream_(stream)); }
void OMPRPC_LIBC_(clearerr)(omprpc_libc_FILE_ *stream) { omprpc_clearerr(omprpc_libc_stream_(stream)); }

/* LLVM libc 19's extension, with its prototype (nvlink refuses another): the host calls fn with a copy
 * of the bytes. omprpc_device.h's omprpc_host_call also returns fn's result. */
void OMPRPC_LIBC_(rpc_host_call)(void *fn, void *data, size_t size) { (void)omprpc_host_call(fn, data, size); }

/* ---- Memory ----------------------------------------------------------------------------------------
 * Blocks of the device heap the plugin reserves (RPC MALLOC/FREE). Each block starts 16 bytes before
 * the pointer handed out: the heap's own pointer (which differs for aligned_alloc) and the size asked
 * for, which realloc needs. */

typedef struct {
  uint64_t raw;
  uint64_t size;
} omprpc_libc_block_;

static inline void *omprpc_libc_alloc_(size_t size, size_t alignment) {
  if (alignment < 16)
    alignment = 16;
  if (size > ~(size_t)0 - alignment - 16)
    return 0;
  char *raw = (char *)omprpc_malloc(size + 16 + (alignment - 16));
  if (!raw)
    return 0;
  uintptr_t at = ((uintptr_t)raw + 16 + alignment - 1) / alignment * alignment;
  omprpc_libc_block_ *block = (omprpc_libc_block_ *)(at - 16);
  block->raw = (uint64_t)(uintptr_t)raw;
  block->size = size;
  return (void *)at;
}

static inline omprpc_libc_block_ *omprpc_libc_block_of_(void *ptr) {
  return (omprpc_libc_block_ *)((char *)ptr - 16);
}

void *OMPRPC_LIBC_(malloc)(size_t size) { return omprpc_libc_alloc_(size, 16); }

void OMPRPC_LIBC_(free)(void *ptr) {
  if (ptr)
    omprpc_free((void *)(uintptr_t)omprpc_libc_block_of_(ptr)->raw);
}

void *OMPRPC_LIBC_(calloc)(size_t count, size_t size) {
  if (size && count > ~(size_t)0 / size)
    return 0;
  char *p = (char *)omprpc_libc_alloc_(count * size, 16);
  if (p)
    for (size_t i = 0; i < count * size; ++i)
      p[i] = 0;
  return p;
}

void *OMPRPC_LIBC_(realloc)(void *ptr, size_t size) {
  if (!ptr)
    return OMPRPC_LIBC_(malloc)(size);
  if (size == 0) {
    OMPRPC_LIBC_(free)(ptr);
    return 0;
  }
  uint64_t old = omprpc_libc_block_of_(ptr)->size;
  void *moved = omprpc_libc_alloc_(size, 16);
  if (!moved)
    return 0;
  omprpc_copy_(moved, ptr, old < size ? old : size);
  OMPRPC_LIBC_(free)(ptr);
  return moved;
}

void *OMPRPC_LIBC_(aligned_alloc)(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    return 0;
  return omprpc_libc_alloc_(size, alignment);
}

/* asprintf for omprpc_libc.h (its snprintf and sprintf need no library code): formatted by the host's
 * C library (omprpc_device.h), the text in a block of this library's malloc, which the program's free
 * takes. */
int omprpc_libc_asprintf_args(char **out, const omprpc_arg *args, uint32_t count) {
  return omprpc_asprintf_with_(out, OMPRPC_LIBC_(malloc), OMPRPC_LIBC_(free), args, count);
}

/* ---- The environment ------------------------------------------------------------------------------
 * getenv: the host's C library looks the name up (plugin opcode GETENV, src/rpc/services/getenv.rs)
 * and answers the value with its NUL, or nothing when the variable is unset. The device keeps each
 * value it was given in a block of this library's malloc, on a list per device, and hands out that
 * copy: a name asked for again with the same value gets the same pointer, and a pointer once handed
 * out stays valid for the rest of the program (a value that changed on the host gets a block of its
 * own). A NULL name is NULL, as is a name asked for on a GPU with no server to answer. */

typedef struct omprpc_libc_env_ {
  struct omprpc_libc_env_ *next;
  uint64_t name_size;  /* with its NUL */
  uint64_t value_size; /* with its NUL */
} omprpc_libc_env_;

/* The name, then the value, right after an entry (not a flexible array member: clang-16's OpenMP
 * passes call it incomplete where it is used). */
static inline char *omprpc_libc_env_bytes_(omprpc_libc_env_ *e) { return (char *)(e + 1); }

static omprpc_libc_env_ *omprpc_libc_env_kept_;

static int omprpc_libc_same_bytes_(const char *a, const char *b, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return 0;
  return 1;
}

/* Asks the host for name's value (name_size bytes, its NUL included), keeping at most `capacity`
 * bytes in `value`; returns the value's size with its NUL, 0 when the variable is unset. */
static uint64_t omprpc_libc_ask_env_(const char *name, uint64_t name_size, char *value, uint64_t capacity) {
  omprpc_client_port port = omprpc_open(OMPRPC_OP_GETENV);
  omprpc_send_n(&port, name, name_size);
  uint64_t size = omprpc_recv_n(&port, value, capacity);
  omprpc_close(&port);
  return size;
}

/* The kept copy of name's value (size bytes with its NUL): the one on the list, or a new one. */
static char *omprpc_libc_keep_env_(const char *name, uint64_t name_size, const char *value, uint64_t size) {
  for (omprpc_libc_env_ *e = __atomic_load_n(&omprpc_libc_env_kept_, __ATOMIC_ACQUIRE); e; e = e->next)
    if (e->name_size == name_size && e->value_size == size && omprpc_libc_same_bytes_(omprpc_libc_env_bytes_(e), name, name_size) &&
        omprpc_libc_same_bytes_(omprpc_libc_env_bytes_(e) + name_size, value, size))
      return omprpc_libc_env_bytes_(e) + name_size;
  omprpc_libc_env_ *e = (omprpc_libc_env_ *)OMPRPC_LIBC_(malloc)(sizeof(omprpc_libc_env_) + name_size + size);
  if (!e)
    return 0;
  e->name_size = name_size;
  e->value_size = size;
  omprpc_copy_(omprpc_libc_env_bytes_(e), name, name_size);
  omprpc_copy_(omprpc_libc_env_bytes_(e) + name_size, value, size);
  e->next = __atomic_load_n(&omprpc_libc_env_kept_, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&omprpc_libc_env_kept_, &e->next, e, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    ;
  return omprpc_libc_env_bytes_(e) + name_size;
}

char *OMPRPC_LIBC_(getenv)(const char *name) {
  if (!name)
    return 0;
  if (!omprpc_rpc_active()) {
#if !OMPRPC_GPU_
    return getenv(name); /* the host device without omprpc's server: the host's own */
#else
    return 0;
#endif
  }
  uint64_t name_size = omprpc_strlen_(name) + 1;
  char small[120];
  char *value = small;
  uint64_t capacity = sizeof small;
  uint64_t size = omprpc_libc_ask_env_(name, name_size, value, capacity);
  /* A longer value: asked for again into a block of its size (again, if it grew meanwhile). */
  while (size > capacity) {
    if (value != small)
      OMPRPC_LIBC_(free)(value);
    value = (char *)OMPRPC_LIBC_(malloc)(size);
    if (!value)
      return 0;
    capacity = size;
    size = omprpc_libc_ask_env_(name, name_size, value, capacity);
  }
  /* The host's answer ends in its NUL; one without cannot be glibc's value. */
  char *kept = size && value[size - 1] == 0 ? omprpc_libc_keep_env_(name, name_size, value, size) : 0;
  if (value != small)
    OMPRPC_LIBC_(free)(value);
  return kept;
}

/* ---- Ending the program ----------------------------------------------------------------------------
 * atexit's handlers live on the device, as in LLVM libc's GPU build: at most 64 (its fixed list's
 * size), run by exit on the device in the reverse order of their registration, each once (a lane that
 * calls exit takes each handler it runs, so lanes exiting together share the list). They do not run
 * when the host program ends without a device exit: no device code runs then. _Exit runs none. Both
 * then end the process through the host (RPC EXIT), which flushes the host's streams, where what the
 * device printed already is, as for LLVM libc's exit and _Exit alike. */

/* A list of exit handlers (atexit's, or at_quick_exit's): 64 at most, taken one by one when run so
 * that lanes running the list together run each handler once. */
typedef struct {
  void (*handlers[64])(void);
  uint32_t count;
} omprpc_libc_exit_handlers_;

static omprpc_libc_exit_handlers_ omprpc_libc_atexit_handlers_;

static int omprpc_libc_add_exit_handler_(omprpc_libc_exit_handlers_ *list, void (*handler)(void)) {
  uint32_t slot = __atomic_fetch_add(&list->count, 1, __ATOMIC_RELAXED);
  if (slot >= 64) {
    __atomic_store_n(&list->count, 64, __ATOMIC_RELAXED);
    return -1;
  }
  __atomic_store_n(&list->handlers[slot], handler, __ATOMIC_RELEASE);
  return 0;
}

/* Runs the list's handlers, the last registered first. */
static void omprpc_libc_run_exit_handlers_(omprpc_libc_exit_handlers_ *list) {
  uint32_t count = __atomic_load_n(&list->count, __ATOMIC_RELAXED);
  for (uint32_t slot = count < 64 ? count : 64; slot-- > 0;) {
    void (*handler)(void) = __atomic_exchange_n(&list->handlers[slot], 0, __ATOMIC_ACQ_REL);
    if (handler)
      handler();
  }
}

int OMPRPC_LIBC_(atexit)(void (*handler)(void)) {
  return omprpc_libc_add_exit_handler_(&omprpc_libc_atexit_handlers_, handler);
}

void OMPRPC_LIBC_(exit)(int status) {
  omprpc_libc_run_exit_handlers_(&omprpc_libc_atexit_handlers_);
  omprpc_exit(status);
  __builtin_unreachable();
}

void OMPRPC_LIBC_(_Exit)(int status) {
  omprpc_exit(status);
  __builtin_unreachable();
}

/* quick_exit and at_quick_exit, as LLVM libc's GPU build has them: a list of their own (64 handlers at
 * most, as atexit's), run by quick_exit the last registered first, each once; then the process ends as
 * with _Exit, without atexit's handlers. */
static omprpc_libc_exit_handlers_ omprpc_libc_quick_exit_handlers_;

int OMPRPC_LIBC_(at_quick_exit)(void (*handler)(void)) {
  return omprpc_libc_add_exit_handler_(&omprpc_libc_quick_exit_handlers_, handler);
}

void OMPRPC_LIBC_(quick_exit)(int status) {
  omprpc_libc_run_exit_handlers_(&omprpc_libc_quick_exit_handlers_);
  omprpc_exit(status);
  __builtin_unreachable();
}

void OMPRPC_LIBC_(abort)(void) {
  omprpc_abort();
  __builtin_unreachable();
}

/* A failed assert, reported by the host's C library, which aborts (status 134). Under its own name too,
 * for omprpc_libc.h's __assert_fail on NVIDIA GPUs, where each unit's assert otherwise binds to the
 * device runtime's (CUDA's printf, then a trap). */
void omprpc_libc_report_assertion(const char *expression, const char *file, unsigned int line,
                                  const char *function) {
  if (!omprpc_rpc_active())
    OMPRPC_LIBC_(abort)();
  omprpc_packet packet;
  omprpc_zero_(&packet);
  packet.data[0] = line;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_ASSERT_FAIL);
  omprpc_send(&port, &packet);
  omprpc_send_n(&port, expression, omprpc_strlen_(expression) + 1);
  omprpc_send_n(&port, file, omprpc_strlen_(file) + 1);
  omprpc_send_n(&port, function, omprpc_strlen_(function) + 1);
  omprpc_close(&port);
  omprpc_halt_();
}

/* glibc's assert calls this. */
void OMPRPC_LIBC_(__assert_fail)(const char *expression, const char *file, unsigned int line,
                                 const char *function) {
  omprpc_libc_report_assertion(expression, file, line, function);
}

#pragma omp end declare target

#ifdef __cplusplus
}
#endif

#endif
