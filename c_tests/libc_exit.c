/* The device library's exit, _Exit and atexit (device/omprpc_libc.c, built for the host device with its
 * functions named omprpc_libc_*), run through omprpc on the host device. The host prints a line it
 * leaves in its stdout buffer; the target region registers two handlers that print and then 62 that
 * count (64 in all, LLVM libc's limit: a 65th is refused), prints, writes a file it does not close
 * (argv[2]), and calls exit(5) (argv[1] "exit": the handlers run in the reverse order, the 62 first)
 * or _Exit(6) ("_Exit": none runs). It registers quick_exit's handlers too (two that print, 62 that
 * count, a 65th refused), which only quick_exit(7) runs ("quick_exit": the last registered first, and
 * no atexit handler). The test driver checks the status, and that every line is there once, in order,
 * and the file's bytes too. */
#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

#pragma omp declare target
static int counted;
static void count(void) { counted++; }
static void first(void) { omprpc_libc_puts("device: handler 1"); }
static void quick_first(void) { omprpc_libc_puts("device: quick handler 1"); }
static void quick_second(void) {
  char line[64];
  snprintf(line, sizeof line, "device: quick handler 2, after %d", counted);
  omprpc_libc_puts(line);
}
static void second(void) {
  char line[64];
  snprintf(line, sizeof line, "device: handler 2, after %d", counted);
  omprpc_libc_puts(line);
}
#pragma omp end declare target

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  int mode = strcmp(argv[1], "_Exit") == 0 ? 1 : strcmp(argv[1], "quick_exit") == 0 ? 2 : 0;
  const char *path = argv[2];
  printf("host: before the target region\n"); /* left in the buffer */
#pragma omp target map(to : path[0:strlen(path) + 1])
  {
    int results = omprpc_libc_atexit(first) + omprpc_libc_atexit(second);
    for (int i = 0; i < 62; i++)
      results += omprpc_libc_atexit(count);
    int refused = omprpc_libc_atexit(count);
    char line[64];
    snprintf(line, sizeof line, "device: registered %d, then %d", results, refused);
    omprpc_libc_puts(line);
    results = omprpc_libc_at_quick_exit(quick_first) + omprpc_libc_at_quick_exit(quick_second);
    for (int i = 0; i < 62; i++)
      results += omprpc_libc_at_quick_exit(count);
    refused = omprpc_libc_at_quick_exit(count);
    snprintf(line, sizeof line, "device: quick registered %d, then %d", results, refused);
    omprpc_libc_puts(line);
    omprpc_libc_FILE_ *file = omprpc_libc_fopen(path, "w");
    omprpc_libc_fputs("written by the device\n", file);
    if (mode == 1)
      omprpc_libc__Exit(6);
    else if (mode == 2)
      omprpc_libc_quick_exit(7);
    else
      omprpc_libc_exit(5);
  }
  printf("host: after the target region\n");
  return 0;
}
