/* omprpc_device.h: host services for OpenMP target regions, through the RPC protocol of LLVM libc 19.1.
 *
 * Include it in the program's sources; call the omprpc_* functions below from target regions. Each
 * call is carried to the host over the shared-memory mailbox that the omprpc plugin sets up when it
 * loads an image exporting __llvm_libc_rpc_client (this header defines it), and served there by LLVM
 * libc's RPC server: output goes to the host's stdout/stderr and files, malloc returns device memory,
 * exit ends the host process, and opcodes from 0x8000 reach handlers the host program registered with
 * omprpc_register_handler (include/omprpc.h).
 *
 * This version speaks the protocol with one lane, as the host (x86_64) device needs. Where no omprpc
 * server is attached (the stock plugin, or host fallback), each call is carried out directly, so that
 * programs still work; omprpc_rpc_active() tells which.
 *
 * Streams: OMPRPC_STDIN, OMPRPC_STDOUT, OMPRPC_STDERR, or what omprpc_fopen returned. printf-family
 * calls are formatted by the host; conversions are those of C99 printf (no positional arguments). */
#ifndef OMPRPC_DEVICE_H
#define OMPRPC_DEVICE_H

#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h" /* omprpc_packet, shared with host-side handlers */

#ifdef __cplusplus
extern "C" {
#endif

#pragma omp begin declare target

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
  OMPRPC_OP_FSEEK = 17,
  OMPRPC_OP_FTELL = 18,
  OMPRPC_OP_FFLUSH = 19,
  OMPRPC_OP_PRINTF_TO_STDOUT = 21,
  OMPRPC_OP_PRINTF_TO_STDERR = 22,
  OMPRPC_OP_PRINTF_TO_STREAM = 23,
  OMPRPC_OP_REMOVE = 27,
  OMPRPC_OP_FIRST_USER = 0x8000
};

/* A host stream as the device names it: the host FILE*, or 1/2/3 for stdin/stdout/stderr. */
typedef struct omprpc_file omprpc_file;
#define OMPRPC_STDIN ((omprpc_file *)(uintptr_t)1)
#define OMPRPC_STDOUT ((omprpc_file *)(uintptr_t)2)
#define OMPRPC_STDERR ((omprpc_file *)(uintptr_t)3)

/* The 19.1 client object (552 bytes), filled in by the host. */
typedef struct {
  uint64_t mask;
  uint16_t opcode;
} omprpc_header;
typedef struct {
  uint32_t port_count;
  uint32_t *inbox;  /* written by the host */
  uint32_t *outbox; /* written by the device */
  omprpc_header *header;
  omprpc_packet *packet;
  uint32_t lock[128];
} omprpc_client;

/* Each image has its own pointer and client object, bound inside the image: the pointer is exported
 * (the host looks it up in the loaded image) but protected, and the object hidden, so that neither
 * binds to a same-named copy elsewhere in the process (the host program's, another image's). */
__attribute__((weak, visibility("hidden"))) omprpc_client omprpc_client_object;
__attribute__((weak, visibility("protected"))) omprpc_client *__llvm_libc_rpc_client = &omprpc_client_object;

/* One open port. */
typedef struct {
  omprpc_client *client;
  uint32_t index;
  uint32_t out;
  int receive;
  int owns_buffer;
} omprpc_client_port;

static inline int omprpc_rpc_active(void) {
  omprpc_client *c = __llvm_libc_rpc_client;
  return c && __atomic_load_n(&c->port_count, __ATOMIC_ACQUIRE) != 0;
}

static inline void omprpc_pause_(uint32_t *spins) {
  if (++*spins < 1024) {
    __builtin_ia32_pause();
  } else {
    /* Long waits give the core away: on a host device the server shares the processors. */
    sched_yield();
  }
}

static inline uint32_t omprpc_load_inbox_(omprpc_client *c, uint32_t i) {
  return __atomic_load_n(&c->inbox[i], __ATOMIC_RELAXED);
}

static inline void omprpc_unlock_(omprpc_client *c, uint32_t i) {
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_fetch_and(&c->lock[i / 32], ~(1u << (i % 32)), __ATOMIC_RELAXED);
}

static inline omprpc_client_port omprpc_open(uint16_t opcode) {
  omprpc_client *c = __llvm_libc_rpc_client;
  uint32_t spins = 0;
  /* Start from a per-thread port so that threads spread over the ports. */
  uint32_t index = (uint32_t)(((uintptr_t)__builtin_frame_address(0) >> 12) % c->port_count);
  for (;; ++index) {
    if (index >= c->port_count)
      index = 0;
    uint32_t bit = 1u << (index % 32);
    if (__atomic_fetch_or(&c->lock[index / 32], bit, __ATOMIC_RELAXED) & bit) {
      omprpc_pause_(&spins);
      continue;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint32_t in = omprpc_load_inbox_(c, index);
    uint32_t out = __atomic_load_n(&c->outbox[index], __ATOMIC_RELAXED);
    if (in != out) {
      omprpc_unlock_(c, index);
      omprpc_pause_(&spins);
      continue;
    }
    c->header[index].opcode = opcode;
    c->header[index].mask = 1;
    omprpc_client_port port = {c, index, out, 0, 1};
    return port;
  }
}

static inline void omprpc_wait_(omprpc_client_port *p, uint32_t in) {
  uint32_t spins = 0;
  while (in != p->out) {
    omprpc_pause_(&spins);
    in = omprpc_load_inbox_(p->client, p->index);
  }
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static inline void omprpc_flip_(omprpc_client_port *p) {
  p->out = !p->out;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&p->client->outbox[p->index], p->out, __ATOMIC_RELAXED);
}

/* Sends one packet: waits until the port is ours, fills it, hands it over. */
static inline void omprpc_send(omprpc_client_port *p, const omprpc_packet *packet) {
  omprpc_wait_(p, p->owns_buffer ? p->out : omprpc_load_inbox_(p->client, p->index));
  p->client->packet[p->index] = *packet;
  omprpc_flip_(p);
  p->owns_buffer = 0;
  p->receive = 0;
}

/* Receives one packet. */
static inline void omprpc_recv(omprpc_client_port *p, omprpc_packet *packet) {
  if (p->receive) {
    omprpc_flip_(p);
    p->owns_buffer = 0;
  }
  omprpc_wait_(p, p->owns_buffer ? p->out : omprpc_load_inbox_(p->client, p->index));
  *packet = p->client->packet[p->index];
  p->receive = 1;
  p->owns_buffer = 1;
}

static inline void omprpc_close(omprpc_client_port *p) { omprpc_unlock_(p->client, p->index); }

/* Sends `size` bytes: the size and the first 56 bytes, then 64 bytes a packet. */
static inline void omprpc_send_n(omprpc_client_port *p, const void *src, uint64_t size) {
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  packet.data[0] = size;
  memcpy(&packet.data[1], src, size < 56 ? size : 56);
  omprpc_send(p, &packet);
  for (uint64_t idx = 56; idx < size; idx += 64) {
    memcpy(packet.data, (const char *)src + idx, size - idx < 64 ? size - idx : 64);
    omprpc_send(p, &packet);
  }
}

/* Receives a byte string into `dst` (at most `capacity` bytes kept); returns its full size. */
static inline uint64_t omprpc_recv_n(omprpc_client_port *p, void *dst, uint64_t capacity) {
  omprpc_packet packet;
  omprpc_recv(p, &packet);
  uint64_t size = packet.data[0];
  uint64_t first = size < 56 ? size : 56;
  memcpy(dst, &packet.data[1], first < capacity ? first : capacity);
  for (uint64_t idx = 56; idx < size; idx += 64) {
    omprpc_recv(p, &packet);
    uint64_t len = size - idx < 64 ? size - idx : 64;
    if (idx < capacity)
      memcpy((char *)dst + idx, packet.data, idx + len <= capacity ? len : capacity - idx);
  }
  return size;
}

/* ---- Streams ---------------------------------------------------------------------------------- */

static inline FILE *omprpc_host_stream_(omprpc_file *f) {
  uintptr_t v = (uintptr_t)f;
  return v == 1 ? stdin : v == 2 ? stdout : v == 3 ? stderr : (FILE *)v;
}

/* The host serves some requests with the stream as a raw FILE*: only real host streams may go there. */
static inline int omprpc_is_file_(omprpc_file *f) { return (uintptr_t)f > 3; }
static inline int omprpc_writable_(omprpc_file *f) { return f == OMPRPC_STDOUT || f == OMPRPC_STDERR || omprpc_is_file_(f); }

static inline size_t omprpc_write_(omprpc_file *f, const void *data, size_t size, uint16_t op) {
  if (!omprpc_writable_(f))
    return 0;
  if (!omprpc_rpc_active())
    return fwrite(data, 1, size, omprpc_host_stream_(f));
  omprpc_packet packet;
  omprpc_client_port port = omprpc_open(op);
  if (op == OMPRPC_OP_WRITE_TO_STREAM) {
    packet.data[0] = (uint64_t)(uintptr_t)f;
    omprpc_send(&port, &packet);
  }
  omprpc_send_n(&port, data, size);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (size_t)packet.data[0];
}

static inline uint16_t omprpc_write_opcode_(omprpc_file *f) {
  return f == OMPRPC_STDOUT ? OMPRPC_OP_WRITE_TO_STDOUT
         : f == OMPRPC_STDERR ? OMPRPC_OP_WRITE_TO_STDERR
                              : OMPRPC_OP_WRITE_TO_STREAM;
}

static inline size_t omprpc_fwrite(const void *data, size_t size, size_t count, omprpc_file *f) {
  if (size == 0 || count == 0)
    return 0;
  return omprpc_write_(f, data, size * count, omprpc_write_opcode_(f)) / size;
}

static inline int omprpc_fputs(const char *s, omprpc_file *f) {
  size_t n = strlen(s);
  return omprpc_write_(f, s, n, omprpc_write_opcode_(f)) == n ? 0 : EOF;
}

static inline int omprpc_puts(const char *s) {
  size_t n = strlen(s);
  if (!omprpc_rpc_active())
    return puts(s);
  return omprpc_write_(OMPRPC_STDOUT, s, n, OMPRPC_OP_WRITE_TO_STDOUT_NEWLINE) == n + 1 ? 0 : EOF;
}

static inline omprpc_file *omprpc_fopen(const char *path, const char *mode) {
  if (!omprpc_rpc_active())
    return (omprpc_file *)fopen(path, mode);
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_OPEN_FILE);
  omprpc_send_n(&port, path, strlen(path) + 1);
  size_t mode_len = strlen(mode) + 1;
  memcpy(packet.data, mode, mode_len < sizeof packet.data ? mode_len : sizeof packet.data - 1);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (omprpc_file *)(uintptr_t)packet.data[0];
}

/* One packet out (data[0..2]), one back; the result is data[0] of the reply. */
static inline uint64_t omprpc_simple_(uint16_t op, uint64_t a, uint64_t b, uint64_t c) {
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  packet.data[0] = a;
  packet.data[1] = b;
  packet.data[2] = c;
  omprpc_client_port port = omprpc_open(op);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return packet.data[0];
}

static inline int omprpc_fclose(omprpc_file *f) {
  if (!omprpc_is_file_(f))
    return EOF;
  if (!omprpc_rpc_active())
    return fclose(omprpc_host_stream_(f));
  return omprpc_simple_(OMPRPC_OP_CLOSE_FILE, (uintptr_t)f, 0, 0) == 0 ? 0 : EOF;
}

static inline size_t omprpc_fread(void *buffer, size_t size, size_t count, omprpc_file *f) {
  if (size == 0 || count == 0 || !f)
    return 0;
  if (!omprpc_rpc_active())
    return fread(buffer, size, count, omprpc_host_stream_(f));
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
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
    return NULL;
  if (!omprpc_rpc_active())
    return fgets(s, count, omprpc_host_stream_(f));
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  packet.data[0] = (uint64_t)count;
  packet.data[1] = (uintptr_t)f;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_READ_FGETS);
  omprpc_send(&port, &packet);
  uint64_t got = omprpc_recv_n(&port, s, (uint64_t)count);
  omprpc_close(&port);
  return got == 0 ? NULL : s;
}

static inline int omprpc_fseek(omprpc_file *f, long offset, int whence) {
  if (!f)
    return -1;
  if (!omprpc_rpc_active())
    return fseek(omprpc_host_stream_(f), offset, whence);
  return (int)omprpc_simple_(OMPRPC_OP_FSEEK, (uintptr_t)f, (uint64_t)offset, (uint64_t)whence);
}

static inline long omprpc_ftell(omprpc_file *f) {
  if (!f)
    return -1L;
  if (!omprpc_rpc_active())
    return ftell(omprpc_host_stream_(f));
  return (long)omprpc_simple_(OMPRPC_OP_FTELL, (uintptr_t)f, 0, 0);
}

static inline int omprpc_fflush(omprpc_file *f) {
  if (!omprpc_rpc_active())
    return fflush(omprpc_host_stream_(f));
  return (int)omprpc_simple_(OMPRPC_OP_FFLUSH, (uintptr_t)f, 0, 0);
}

static inline int omprpc_feof(omprpc_file *f) {
  if (!f)
    return 0;
  if (!omprpc_rpc_active())
    return feof(omprpc_host_stream_(f));
  return (int)omprpc_simple_(OMPRPC_OP_FEOF, (uintptr_t)f, 0, 0);
}

static inline int omprpc_ferror(omprpc_file *f) {
  if (!f)
    return 1;
  if (!omprpc_rpc_active())
    return ferror(omprpc_host_stream_(f));
  return (int)omprpc_simple_(OMPRPC_OP_FERROR, (uintptr_t)f, 0, 0);
}

static inline int omprpc_remove(const char *path) {
  if (!omprpc_rpc_active())
    return remove(path);
  omprpc_packet packet;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_REMOVE);
  omprpc_send_n(&port, path, strlen(path) + 1);
  omprpc_recv(&port, &packet);
  omprpc_close(&port);
  return (int)packet.data[0];
}

/* ---- printf ----------------------------------------------------------------------------------- */

/* Appends one argument of `size` bytes at its natural alignment, as libc's server reads them. */
static inline size_t omprpc_put_arg_(char *args, size_t used, size_t capacity, const void *value, size_t size) {
  size_t at = (used + size - 1) / size * size;
  if (at + size <= capacity)
    memcpy(args + at, value, size);
  return at + size;
}

/* Packs the arguments `format` asks for from `ap` the way libc's server reads them; returns the bytes
 * needed (may exceed capacity). Arguments are consumed as C defines the format, but only those the
 * server's parser reads are stored: it reads nothing for %n (built without it) nor for a conversion
 * with the ' flag (which it does not know, and prints as text). */
static inline size_t omprpc_pack_args_(const char *format, va_list ap, char *args, size_t capacity) {
  size_t used = 0;
  for (const char *p = format; *p; ++p) {
    if (*p != '%')
      continue;
    ++p;
    if (*p == '%')
      continue;
    int emit = 1;
    while (*p && strchr("-+ #0'", *p)) {
      if (*p == '\'')
        emit = 0;
      ++p;
    }
    if (*p == '*') {
      int v = va_arg(ap, int);
      if (emit)
        used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      ++p;
    } else {
      while (*p >= '0' && *p <= '9')
        ++p;
    }
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        int v = va_arg(ap, int);
        if (emit)
          used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
        ++p;
      } else {
        while (*p >= '0' && *p <= '9')
          ++p;
      }
    }
    int longs = 0, big = 0;
    for (;; ++p) {
      if (*p == 'h')
        continue;
      if (*p == 'l')
        ++longs;
      else if (*p == 'j' || *p == 'z' || *p == 't')
        longs = 2;
      else if (*p == 'L')
        big = 1, longs = 2;
      else
        break;
    }
    switch (*p) {
    case 'd': case 'i': case 'o': case 'u': case 'x': case 'X': case 'c': case 'b': case 'B':
      if (longs == 0 || *p == 'c') {
        int v = va_arg(ap, int);
        if (emit)
          used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      } else {
        long long v = va_arg(ap, long long);
        if (emit)
          used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      }
      break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
      if (big) {
        long double v = va_arg(ap, long double);
        if (emit)
          used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      } else {
        double v = va_arg(ap, double);
        if (emit)
          used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      }
      break;
    case 's': case 'p': {
      void *v = va_arg(ap, void *);
      if (emit)
        used = omprpc_put_arg_(args, used, capacity, &v, sizeof v);
      break;
    }
    case 'n':
      (void)va_arg(ap, void *);
      break;
    case '\0':
      return used;
    default: /* unknown: text on the host, no argument in C either */
      break;
    }
  }
  return used;
}

static inline int omprpc_vfprintf(omprpc_file *f, const char *format, va_list ap) {
  if (!omprpc_writable_(f))
    return -1;
  if (!omprpc_rpc_active())
    return vfprintf(omprpc_host_stream_(f), format, ap);
  char small[256];
  va_list count_ap;
  va_copy(count_ap, ap);
  size_t need = omprpc_pack_args_(format, count_ap, small, sizeof small);
  va_end(count_ap);
  char *args = small;
  if (need > sizeof small) {
    args = (char *)malloc(need);
    if (!args)
      return -1;
    va_list again;
    va_copy(again, ap);
    omprpc_pack_args_(format, again, args, need);
    va_end(again);
  }
  uint16_t op = f == OMPRPC_STDOUT   ? OMPRPC_OP_PRINTF_TO_STDOUT
                : f == OMPRPC_STDERR ? OMPRPC_OP_PRINTF_TO_STDERR
                                     : OMPRPC_OP_PRINTF_TO_STREAM;
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  omprpc_client_port port = omprpc_open(op);
  if (op == OMPRPC_OP_PRINTF_TO_STREAM) {
    packet.data[0] = (uintptr_t)f;
    omprpc_send(&port, &packet);
  }
  omprpc_send_n(&port, format, strlen(format) + 1);
  omprpc_recv(&port, &packet);
  uint64_t args_size = packet.data[0];
  omprpc_send_n(&port, args, args_size < need ? args_size : need);
  int result;
  for (;;) {
    omprpc_recv(&port, &packet);
    result = (int)(uint32_t)packet.data[0];
    const char *str = (const char *)(uintptr_t)packet.data[1];
    if (!str)
      break;
    omprpc_send_n(&port, str, strlen(str) + 1);
  }
  omprpc_close(&port);
  if (args != small)
    free(args);
  return result;
}

static inline int omprpc_fprintf(omprpc_file *f, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  int n = omprpc_vfprintf(f, format, ap);
  va_end(ap);
  return n;
}

static inline int omprpc_printf(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  int n = omprpc_vfprintf(OMPRPC_STDOUT, format, ap);
  va_end(ap);
  return n;
}

/* ---- Memory, exit, abort ---------------------------------------------------------------------- */

static inline void *omprpc_malloc(size_t size) {
  if (!omprpc_rpc_active())
    return malloc(size);
  return (void *)(uintptr_t)omprpc_simple_(OMPRPC_OP_MALLOC, size, 0, 0);
}

static inline void omprpc_free(void *ptr) {
  if (!omprpc_rpc_active()) {
    free(ptr);
    return;
  }
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  packet.data[0] = (uintptr_t)ptr;
  omprpc_client_port port = omprpc_open(OMPRPC_OP_FREE);
  omprpc_send(&port, &packet);
  omprpc_close(&port);
}

/* Ends the host process with `status` once the host has flushed what the device wrote. */
static inline void omprpc_exit(int status) {
  if (!omprpc_rpc_active())
    exit(status);
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_EXIT);
  omprpc_send(&port, &packet); /* make sure the host listens */
  omprpc_recv(&port, &packet);
  packet.data[0] = (uint32_t)status;
  omprpc_send(&port, &packet);
  omprpc_close(&port);
  for (uint32_t spins = 0;;)
    omprpc_pause_(&spins); /* the host ends the process */
}

/* Aborts the host process, saying so on stderr and flushing what was written first. */
static inline void omprpc_abort(void) {
  static const char message[] = "omprpc: abort() called on the device\n";
  if (!omprpc_rpc_active())
    abort();
  omprpc_write_(OMPRPC_STDERR, message, sizeof message - 1, OMPRPC_OP_WRITE_TO_STDERR);
  omprpc_simple_(OMPRPC_OP_FFLUSH, 0, 0, 0); /* stream 0 is fflush(NULL): every host stream */
  omprpc_packet packet;
  memset(&packet, 0, sizeof packet);
  omprpc_client_port port = omprpc_open(OMPRPC_OP_ABORT);
  omprpc_send(&port, &packet);
  omprpc_recv(&port, &packet);
  omprpc_send(&port, &packet);
  omprpc_close(&port);
  for (uint32_t spins = 0;;)
    omprpc_pause_(&spins);
}

/* ---- User host calls -------------------------------------------------------------------------- */

/* Calls the host handler of user opcode `opcode` (0x8000 or above) with one packet, which the
 * handler's reply overwrites. The handler receives one packet and sends one back. Without a server
 * (omprpc_rpc_active() == 0) the reply is all zeros. */
static inline void omprpc_call(uint16_t opcode, omprpc_packet *packet) {
  if (!omprpc_rpc_active()) { /* no host handler can be reached: the reply is all zeros */
    memset(packet, 0, sizeof *packet);
    return;
  }
  omprpc_client_port port = omprpc_open(opcode);
  omprpc_send(&port, packet);
  omprpc_recv(&port, packet);
  omprpc_close(&port);
}

/* Calls the host handler of `opcode` with `in_size` bytes; the handler's byte reply is copied to
 * `out` (at most `out_capacity` bytes kept). Returns the size of the reply. The handler receives
 * with omprpc_port_recv_n and replies with omprpc_port_send_n. */
static inline uint64_t omprpc_call_bytes(uint16_t opcode, const void *in, uint64_t in_size, void *out,
                                         uint64_t out_capacity) {
  if (!omprpc_rpc_active()) /* no host handler can be reached: an empty reply */
    return 0;
  omprpc_client_port port = omprpc_open(opcode);
  omprpc_send_n(&port, in, in_size);
  uint64_t size = omprpc_recv_n(&port, out, out_capacity);
  omprpc_close(&port);
  return size;
}

#pragma omp end declare target

#ifdef __cplusplus
}
#endif

#endif /* OMPRPC_DEVICE_H */
