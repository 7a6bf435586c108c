/* Every host service of include/omprpc_device.h, called from the threads of a target region, so that
 * the header is compiled (and, on a GPU, run) for each device kind: every lane of every warp prints its
 * own line, moves its own byte string, and allocates its own block. */
#include "omprpc.h"
#include "omprpc_device.h"
#include <omp.h>
#include <stdio.h>

#define OP_TWICE 0x8123

int main(void) {
  int failures = 0;
  unsigned long long checksum = 0;
#pragma omp target teams num_teams(2) thread_limit(64) map(tofrom : failures, checksum)
#pragma omp parallel reduction(+ : failures, checksum)
  {
    int team = omp_get_team_num(), thread = omp_get_thread_num();
    omprpc_printf("team %d thread %d: %s %ld %.2f %c\n", team, thread, "hello", (long)thread * 1000, 0.5 * thread,
                  'a' + thread % 26);
    omprpc_fprintf(OMPRPC_STDERR, "stderr from %d/%d\n", team, thread);
    char text[96];
    int len = 1 + thread % 90;
    for (int i = 0; i < len; i++)
      text[i] = (char)('A' + (thread + i) % 26);
    text[len] = 0;
    omprpc_puts(text);
    int *block = (int *)omprpc_malloc(sizeof(int) * (size_t)(1 + thread));
    if (!block)
      failures++;
    else {
      block[thread] = thread;
      checksum += (unsigned long long)block[thread];
      omprpc_free(block);
    }
    omprpc_packet packet = {{(uint64_t)thread, 2}};
    omprpc_call(OP_TWICE, &packet);
    if (packet.data[0] != (uint64_t)thread * 2)
      failures++;
    char reply[96];
    uint64_t got = omprpc_call_bytes(OP_TWICE + 1, text, (uint64_t)len, reply, sizeof reply);
    if (got != (uint64_t)len)
      failures++;
    omprpc_file *f = omprpc_fopen("device_client.tmp", "a");
    if (f) {
      omprpc_fwrite(text, 1, (size_t)len, f);
      omprpc_fputs("\n", f);
      omprpc_fflush(f);
      (void)omprpc_ftell(f);
      (void)omprpc_feof(f);
      (void)omprpc_ferror(f);
      (void)omprpc_fseek(f, 0, 0);
      char line[128];
      (void)omprpc_fgets(line, sizeof line, f);
      (void)omprpc_fread(line, 1, 4, f);
      omprpc_fclose(f);
    }
    if (team == 99) {
      omprpc_remove("device_client.tmp");
      omprpc_abort();
      omprpc_exit(1);
    }
  }
  printf("failures %d checksum %llu\n", failures, checksum);
  return 0;
}
