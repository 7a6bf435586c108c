/* Host services for device code whose RPC client is LLVM libc 19.1's own (see libc_calls.h):
 *   client calls FILE   stdout and stderr, a file written, sought, read back and removed, a made-up and
 *                       a twice-closed stream, malloc/free with bad frees, a user opcode; the results
 *                       are printed by the host afterwards
 *   client threads N    N lines from the threads of several teams at once, each exactly once
 *   client exit         a line, then exit(7) from the device */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "libc_calls.h"
#include "omprpc.h"

/* The host side of OP_TRIPLE. */
static void triple(omprpc_port *port, void *) {
  omprpc_packet packets[64];
  uint32_t lanes = omprpc_port_recv(port, packets);
  for (uint32_t i = 0; i < lanes; ++i)
    packets[i].data[0] = packets[i].data[0] * 3 + 1;
  omprpc_port_send(port, packets);
}

struct Line {
  const char *who;
  int number;
  double value;
};

struct Results {
  long stdout_ret, stderr_ret, written, position, read, closed, closed_again, made_up_close, made_up_write;
  long stale_write, stale_read, stale_seek, malloc_ok, tripled, removed;
  char text[32];
};

static int calls(const char *path) {
  Results r;
  memset(&r, 0, sizeof r);
#pragma omp target map(tofrom : r) map(to : path[:strlen(path) + 1])
  {
    r.stdout_ret = print(stdout, "libc client: %s %d %.2f\n", Line{"printf", 42, 3.25});
    r.stderr_ret = libc::fputs("libc client: to stderr\n", stderr);
    FILE *f = libc::fopen(path, "w+");
    r.written = (long)libc::fwrite("0123456789abcdef", 1, 16, f);
    r.position = libc::fseek(f, 10, SEEK_SET) == 0 ? tell_through_host(f) : -1;
    r.read = (long)libc::fread(r.text, 1, 6, f);
    r.closed = libc::fclose(f);
    r.closed_again = libc::fclose(f);
    r.stale_write = (long)libc::fwrite("stale", 1, 5, f);
    r.stale_read = (long)libc::fread(r.text + 8, 1, 4, f);
    r.stale_seek = libc::fseek(f, 0, SEEK_SET);
    FILE *made_up = reinterpret_cast<FILE *>(static_cast<uintptr_t>(0x7654320));
    r.made_up_write = print(made_up, "made up %d\n", 1);
    r.made_up_close = libc::fclose(made_up);
    int local = 0;
    char *block = static_cast<char *>(libc::gpu::allocate(64));
    r.malloc_ok = block != nullptr;
    if (block) {
      block[63] = 1;
      libc::gpu::deallocate(block);
      libc::gpu::deallocate(block);
    }
    libc::gpu::deallocate(&local);
    r.tripled = (long)triple_on_host(14);
    r.removed = libc::remove(path);
  }
  printf("stdout %ld stderr %ld\n", r.stdout_ret, r.stderr_ret);
  printf("file: wrote %ld, at %ld, read %ld \"%.6s\", fclose %ld, again %ld\n", r.written, r.position, r.read,
         r.text, r.closed, r.closed_again);
  printf("after fclose: fwrite %ld fread %ld fseek %ld\n", r.stale_write, r.stale_read, r.stale_seek);
  printf("made-up stream: fprintf %ld fclose %ld\n", r.made_up_write, r.made_up_close);
  printf("malloc %ld, user opcode %ld, remove %ld\n", r.malloc_ok, r.tripled, r.removed);
  return 0;
}

static int threads(int n) {
  long sum = 0;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(8) reduction(+ : sum)
  for (int i = 0; i < n; ++i) {
    struct {
      int call, team, thread;
    } args = {i, omp_get_team_num(), omp_get_thread_num()};
    print(stdout, "call %d from team %d thread %d\n", args);
    sum += i;
  }
  printf("checksum: %ld\n", sum);
  return 0;
}

static int exit_from_device(void) {
#pragma omp target
  {
    libc::puts("libc client: before exit");
    exit_through_host(7);
  }
  printf("not reached\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  /* Start libomptarget (and the plugin), then register the host side of the user opcode. */
#pragma omp target
  {}
  auto reg = OMPRPC_LOOKUP(omprpc_register_handler);
  if (!reg || reg(OP_TRIPLE, triple, nullptr) != 0) {
    fprintf(stderr, "omprpc_register_handler is not available\n");
    return 3;
  }
  if (strcmp(argv[1], "calls") == 0 && argc == 3)
    return calls(argv[2]);
  if (strcmp(argv[1], "threads") == 0 && argc == 3)
    return threads(atoi(argv[2]));
  if (strcmp(argv[1], "exit") == 0)
    return exit_from_device();
  return 2;
}
