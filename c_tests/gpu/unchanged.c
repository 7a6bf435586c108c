/* An unchanged program: the C library calls that existing OpenMP code makes in target regions, with
 * nothing from omprpc in its source. Built for each GPU target with -lomprpc-device (and the opt-in
 * -include omprpc_libc.h for fprintf, and for printf on NVIDIA) by tests/device_library.rs. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef UNCHANGED_WITHOUT_FPRINTF /* a build without the opt-in header, which AMD needs for fprintf */
#define fprintf(stream, ...) 0
#endif

#pragma omp declare target
static int log_line(int i) { return fprintf(stderr, "declare-target function, line %d\n", i); }
#pragma omp end declare target

int main(int argc, char **argv) {
  int status = 0;
  (void)argv;
#pragma omp target map(tofrom : status)
  {
    status += printf("%d %s %f %c %ld %p %Lf %5.2e|\n", 1, "two", 3.0, 'c', 5L, (void *)0, (long double)2.5, 1e10);
    status += puts("puts");
    status += putchar('!');
    if (argc > 3)
      status += getchar();
    status += fputs("to stderr\n", stderr);
    status += fprintf(stdout, "fprintf %d %s\n", 42, "x");
    status += log_line(7);
    FILE *f = fopen("unchanged.tmp", "w+");
    if (f) {
      status += (int)fwrite("abc\n", 1, 4, f);
      fflush(f);
      fseek(f, 0, SEEK_SET);
      char line[8];
      if (fgets(line, sizeof line, f))
        status += (int)ftell(f) + feof(f) + ferror(f);
      char back[4];
      status += (int)fread(back, 1, sizeof back, f);
      fseek(f, 0, SEEK_SET);
      status += fgetc(f) + getc(f) + ungetc('x', f);
      clearerr(f);
      fclose(f);
      remove("unchanged.tmp");
    }
    int *p = (int *)malloc(64 * sizeof(int));
    int *q = (int *)calloc(8, sizeof(int));
    p = (int *)realloc(p, 128 * sizeof(int));
    void *a = aligned_alloc(256, 512);
    status += p && q && a;
    free(p);
    free(q);
    free(a);
    assert(status > 0);
    if (argc > 1)
      exit(status);
    if (argc > 2)
      abort();
  }
  return status < 0;
}
