/* Host services from a target region through omprpc's RPC server: printf/fprintf, puts/fputs, file
 * I/O (fopen, fwrite, fseek, ftell, fread, fgets, feof, ferror, fflush, fclose, remove), malloc/free. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
  const char *path = "omprpc_rpc_services.txt";
  int on_device = 0, rpc = 0;
  long position = -1;
  int eof_after = -1, error_after = -1, removed = -1, sum = 0;
  char line[64] = {0}, head[8] = {0};
#pragma omp target map(tofrom : on_device, rpc, position, eof_after, error_after, removed, sum, line, head)
  {
    on_device = ON_DEVICE();
    rpc = omprpc_rpc_active();
    omprpc_printf("printf: %d %5.2f %s %c %lx %lld %u%%\n", 42, 3.14159, "text", 'z', 0xbeefUL, -7LL, 9u);
    omprpc_fprintf(OMPRPC_STDOUT, "fprintf: %-6s|%*d|%.3s\n", "left", 4, 17, "truncate");
    omprpc_puts("puts: a line");
    omprpc_fputs("fputs: no newline added\n", OMPRPC_STDOUT);
    omprpc_file *f = omprpc_fopen(path, "w+");
    omprpc_fprintf(f, "first line %d\nsecond line\n", 1);
    omprpc_fwrite("0123456789", 1, 10, f);
    omprpc_fflush(f);
    position = omprpc_ftell(f);
    omprpc_fseek(f, 0, SEEK_SET);
    omprpc_fgets(line, sizeof line, f);
    omprpc_fread(head, 1, 6, f);
    char rest[64];
    while (omprpc_fread(rest, 1, sizeof rest, f) > 0)
      ;
    eof_after = omprpc_feof(f) != 0;
    error_after = omprpc_ferror(f);
    omprpc_fclose(f);
    removed = omprpc_remove(path);
    int *numbers = (int *)omprpc_malloc(100 * sizeof(int));
    for (int i = 0; i < 100; i++)
      numbers[i] = i;
    for (int i = 0; i < 100; i++)
      sum += numbers[i];
    omprpc_free(numbers);
  }
  fflush(stdout);
  printf("ran on device: %d\n", on_device);
  printf("served by the host: %d\n", rpc);
  printf("ftell after writing: %ld\n", position);
  printf("fgets: %s", line);
  printf("fread: %s\n", head);
  printf("feof: %d, ferror: %d, remove: %d\n", eof_after, error_after, removed);
  printf("sum of device-malloc'd numbers: %d\n", sum);
  FILE *gone = fopen(path, "r");
  printf("file removed: %d\n", gone == NULL);
  /* Two serving threads for every device: the scanner and one standing by for slow calls. */
  printf("omprpc-rpc threads: %d\n", omprpc_test_threads_named("omprpc-rpc"));
  return 0;
}
