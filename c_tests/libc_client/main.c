/* A program without OpenMP that holds three offloading libraries whose device code calls the host
 * through LLVM libc's own client: library 1 keeps calling on a thread of its own while library 2 is
 * opened, called and closed, and library 3 is opened and called after it, on one device.
 *   main LIB1 LIB2 LIB3
 * Every line of every library must arrive exactly once; library 1 goes on through the others' loads
 * and unloads. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

typedef long (*lines_fn)(int round, int count);

enum { LINES = 50 };

static atomic_int stop;
static lines_fn first;
static long first_rounds, first_written;

static void *open_library(const char *path, lines_fn *fn) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  *fn = (lines_fn)dlsym(handle, "library_lines");
  return *fn ? handle : NULL;
}

/* Library 1's calls, round after round, until told to stop (and at least 20 rounds). */
static void *keep_calling(void *unused) {
  (void)unused;
  for (int round = 0; round < 20 || !atomic_load(&stop); ++round) {
    first_written += first(round, LINES);
    first_rounds = round + 1;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  void *one = open_library(argv[1], &first);
  if (!one)
    return 3;
  first(-1, 1); /* the device and library 1's image are ready before the thread starts */
  pthread_t thread;
  if (pthread_create(&thread, NULL, keep_calling, NULL) != 0)
    return 4;
  long others = 0;
  for (int which = 2; which <= 3; ++which) {
    lines_fn fn;
    void *library = open_library(argv[which], &fn);
    if (!library)
      return 5;
    for (int round = 0; round < 4; ++round)
      others += fn(round, LINES);
    if (dlclose(library) != 0)
      return 6;
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("library 1: %ld rounds, %ld lines written; libraries 2 and 3: %ld lines written\n", first_rounds,
         first_written, others);
  fflush(stdout);
  return dlclose(one) == 0 ? 0 : 7;
}
