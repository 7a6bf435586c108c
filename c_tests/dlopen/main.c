/* A program built without -fopenmp that loads an offloading library at run time:
 *   main LIB once     open, call twice, exit with the library still open
 *   main LIB reopen   open, call, close, open again, call, close, exit */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*compute_fn)(int);

static void *open_library(const char *path, compute_fn *compute) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  *compute = (compute_fn)dlsym(handle, "offload_compute");
  return *compute ? handle : NULL;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  compute_fn compute;
  void *lib = open_library(argv[1], &compute);
  if (!lib)
    return 3;
  printf("first call: %d\n", compute(20));
  if (strcmp(argv[2], "once") == 0) {
    printf("second call: %d\n", compute(20));
  } else {
    if (dlclose(lib) != 0)
      return 4;
    lib = open_library(argv[1], &compute);
    if (!lib)
      return 5;
    printf("after reopening: %d\n", compute(20));
    if (dlclose(lib) != 0)
      return 6;
  }
  printf("exiting\n");
  fflush(stdout);
  return 0;
}
