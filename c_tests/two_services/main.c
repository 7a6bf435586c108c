/* A program built without -fopenmp that opens two offloading libraries whose target regions print
 * through host services:
 *   main LIB1 LIB2 overlap    open both, call both, close LIB1, call LIB2 again, close LIB2
 *   main LIB1 LIB2 sequence   open LIB1, call, close; open LIB2 (likely where LIB1 was), call, close
 * Device lines and the program's own lines share stdout, in call order. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*call_fn)(int);

static void *open_library(const char *path, call_fn *call) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  *call = (call_fn)dlsym(handle, "library_call");
  return *call ? handle : NULL;
}

static void call(const char *what, call_fn fn, int x) {
  int result = fn(x);
  printf("%s returned %d\n", what, result);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  call_fn first, second;
  void *one = open_library(argv[1], &first);
  if (!one)
    return 3;
  if (strcmp(argv[3], "overlap") == 0) {
    void *two = open_library(argv[2], &second);
    if (!two)
      return 4;
    call("library 1", first, 1);
    call("library 2", second, 2);
    if (dlclose(one) != 0)
      return 5;
    call("library 2 after closing library 1", second, 3);
    if (dlclose(two) != 0)
      return 6;
  } else {
    call("library 1", first, 1);
    if (dlclose(one) != 0)
      return 5;
    void *two = open_library(argv[2], &second);
    if (!two)
      return 4;
    call("library 2 after closing library 1", second, 2);
    if (dlclose(two) != 0)
      return 6;
  }
  printf("exiting\n");
  fflush(stdout);
  return 0;
}
