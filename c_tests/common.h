/* Shared by every c_tests program.
 *
 * At exit, each program lists on stderr the libomptarget plugins mapped into it
 * ("omprpc-test: mapped <path>"), read from /proc/self/maps, so that the test driver can prove which
 * plugin ran: libomptarget silently falls back to the stock plugin, or to the host, when a plugin fails
 * to load. Inside target regions, ON_DEVICE() tells whether the code runs on an offload device. */
#ifndef OMPRPC_C_TESTS_COMMON_H
#define OMPRPC_C_TESTS_COMMON_H

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ON_DEVICE() (!omp_is_initial_device())

/* The end of a program that checks the device library in a target region: `counted` holds the checks
 * made, the mismatches found and whether the region ran on an offload device (one that did not counts
 * as a mismatch). Prints them as the tests read them; the program's exit status. */
static inline int report_checks(long counted[3]) {
  printf("on the device: %ld\n", counted[2]);
  if (!counted[2])
    counted[1]++;
  printf("%ld checks, %ld mismatches\n", counted[0], counted[1]);
  return counted[1] != 0;
}

static void omprpc_test_report_plugins(void) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096];
  char seen[16][1024];
  int n = 0;
  if (!maps) {
    fprintf(stderr, "omprpc-test: cannot read /proc/self/maps\n");
    return;
  }
  while (fgets(line, sizeof line, maps)) {
    char *path = strchr(line, '/');
    if (!path || !strstr(path, "libomptarget.rtl."))
      continue;
    path[strcspn(path, "\n")] = 0;
    int dup = 0;
    for (int i = 0; i < n; i++)
      dup |= strcmp(seen[i], path) == 0;
    if (dup || n == 16)
      continue;
    snprintf(seen[n++], sizeof seen[0], "%s", path);
    fprintf(stderr, "omprpc-test: mapped %s\n", path);
  }
  fclose(maps);
}

/* In target regions of the host device only (a GPU pass of the program parses it, never emits it). */
#if !defined(__NVPTX__) && !defined(__AMDGCN__)
#pragma omp declare target
#endif
/* This process's threads named `name` (as /proc/self/task/N/comm shows them; with `prefix_only`, whose
 * name starts with it): how many there are, and, in `cpu_seconds` when not NULL, the seconds they spent
 * on a CPU (/proc/self/task/N/schedstat). Callable from target regions of the host device. */
static inline int omprpc_test_threads_(const char *name, int prefix_only, double *cpu_seconds) {
  int count = 0;
  DIR *tasks = opendir("/proc/self/task");
  struct dirent *task;
  while (tasks && (task = readdir(tasks))) {
    char path[300], comm[64] = {0};
    if (task->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", task->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    int named = fgets(comm, sizeof comm, f) != NULL;
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    if (!named || (prefix_only ? strncmp(comm, name, strlen(name)) : strcmp(comm, name)) != 0)
      continue;
    count++;
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", task->d_name);
    unsigned long long on_cpu_ns = 0;
    if (cpu_seconds && (f = fopen(path, "r"))) {
      if (fscanf(f, "%llu", &on_cpu_ns) == 1)
        *cpu_seconds += (double)on_cpu_ns / 1e9;
      fclose(f);
    }
  }
  if (tasks)
    closedir(tasks);
  return count;
}
#if !defined(__NVPTX__) && !defined(__AMDGCN__)
#pragma omp end declare target
#endif

/* Number of this process's threads named `name`. */
static inline int omprpc_test_threads_named(const char *name) { return omprpc_test_threads_(name, 0, NULL); }

__attribute__((constructor)) static void omprpc_test_register_report(void) {
  atexit(omprpc_test_report_plugins);
}

/* The resident set size of this process, in KiB (-1 if /proc cannot tell). */
static inline long omprpc_test_rss_kib(void) {
  long pages_total = 0, pages_resident = 0;
  FILE *statm = fopen("/proc/self/statm", "r");
  if (!statm)
    return -1;
  int read = fscanf(statm, "%ld %ld", &pages_total, &pages_resident);
  fclose(statm);
  return read == 2 ? pages_resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

#endif
