/* Device calls with stale, made-up or extreme arguments: each fails (or works) as C allows, omprpc
 * names the bad ones in one error line each (c_tests/rpc_hostile_calls.stderr), and the host process
 * goes on. Streams: fclose twice, every stream call after fclose, a made-up stream; memory: free of
 * pointers the device's malloc did not return (stack, the middle of a block, a block freed already),
 * malloc(0) and malloc(1 << 62); strings of 1 MiB through fputs, fwrite and fprintf's %s, read back. */
#include "common.h"
#include "omprpc_device.h"

#define BIG (1 << 20)

int main(void) {
  const char *path = "omprpc_rpc_hostile_calls.txt";
  int closed[2] = {0}, after_close[10] = {0}, made_up[2] = {0};
  int zero_ok = 0, huge_null = 0, reused = 0, removed = -1;
  long written = 0, read_back = 0, mismatches = -1;
#pragma omp target map(tofrom : closed, after_close, made_up, zero_ok, huge_null, reused, removed, \
                           written, read_back, mismatches)
  {
    omprpc_file *f = omprpc_fopen(path, "w+");
    closed[0] = omprpc_fclose(f);
    closed[1] = omprpc_fclose(f);
    char buffer[16];
    after_close[0] = omprpc_fprintf(f, "stale %d\n", 1);
    after_close[1] = omprpc_fputs("stale\n", f);
    after_close[2] = (int)omprpc_fwrite("stale", 1, 5, f);
    after_close[3] = (int)omprpc_fread(buffer, 1, sizeof buffer, f);
    after_close[4] = omprpc_fgets(buffer, sizeof buffer, f) != 0;
    after_close[5] = omprpc_fseek(f, 0, SEEK_SET);
    after_close[6] = (int)omprpc_ftell(f);
    after_close[7] = omprpc_fflush(f);
    after_close[8] = omprpc_feof(f);
    after_close[9] = omprpc_ferror(f);
    omprpc_file *bogus = (omprpc_file *)(uintptr_t)0x12345670;
    made_up[0] = omprpc_fprintf(bogus, "made up %d\n", 2);
    made_up[1] = omprpc_fclose(bogus);

    int local = 0;
    char *block = (char *)omprpc_malloc(64);
    omprpc_free(&local);
    omprpc_free(block + 8);
    omprpc_free(block);
    omprpc_free(block);
    void *zero = omprpc_malloc(0);
    zero_ok = zero != 0;
    omprpc_free(zero);
    huge_null = omprpc_malloc((size_t)1 << 62) == 0;

    char *big = (char *)omprpc_malloc(BIG + 1);
    for (int i = 0; i < BIG; i++)
      big[i] = (char)('a' + i % 26);
    big[BIG] = '\0';
    omprpc_file *out = omprpc_fopen(path, "w");
    reused = out == f; /* the closed stream's FILE is reused, not freed */
    omprpc_fputs(big, out);
    written += (long)omprpc_fwrite(big, 1, BIG, out);
    omprpc_fprintf(out, "%s", big);
    written += omprpc_ftell(out) - BIG;
    omprpc_fclose(out);
    omprpc_file *in = omprpc_fopen(path, "r");
    char chunk[4096];
    size_t got;
    mismatches = 0;
    while ((got = omprpc_fread(chunk, 1, sizeof chunk, in)) > 0) {
      for (size_t i = 0; i < got; i++)
        mismatches += chunk[i] != (char)('a' + (read_back + (long)i) % BIG % 26);
      read_back += (long)got;
    }
    omprpc_fclose(in);
    omprpc_free(big);
    removed = omprpc_remove(path);
  }
  printf("fclose: %d, again: %d\n", closed[0], closed[1]);
  printf("after fclose: fprintf %d fputs %d fwrite %d fread %d fgets %d fseek %d ftell %d fflush %d "
         "feof %d ferror %d\n",
         after_close[0], after_close[1], after_close[2], after_close[3], after_close[4], after_close[5],
         after_close[6], after_close[7], after_close[8], after_close[9]);
  printf("made-up stream: fprintf %d fclose %d\n", made_up[0], made_up[1]);
  printf("malloc(0) non-null: %d, malloc(1 << 62) null: %d\n", zero_ok, huge_null);
  printf("stream reused: %d\n", reused);
  printf("1 MiB strings: written %ld, read back %ld, wrong bytes %ld, removed %d\n", written, read_back,
         mismatches, removed);
  return 0;
}
