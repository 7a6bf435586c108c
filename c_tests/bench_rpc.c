/* RPC benchmark (run by benches/rpc.rs):
 *   latency N        one device thread makes N echo calls; prints ns per round trip
 *   throughput T N   T device threads make N calls in all; prints calls per second
 *   cacheline N      two host threads bounce a cache line N times; prints ns per round trip
 *   idle S           after one host call, the device idles S seconds; prints CPU used per second
 *   wake MS R        R times, a device thread computes MS milliseconds (a fraction allowed) inside its
 *                    kernel without calling, then makes one call; prints that call's round trip (p50
 *                    and p99, ns)
 *   wakefloor MS R   the floor of `wake` on this machine, without the plugin: R times, a host thread
 *                    computes MS milliseconds, then wakes a thread asleep on a futex and spins until
 *                    it answers; prints that round trip (p50 and p99, ns) (host only)
 *   quiet S          a kernel calls once, sleeps S seconds without calling, calls again; prints the CPU
 *                    the plugin's threads (named omprpc-*) used per second of the quiet part (host only)
 *   compute N        two teams of one thread each compute N steps (one host call at the start); prints
 *                    the seconds the region took (with the stock plugin, the call runs on the host)
 *   lulls N          N calls in one kernel, each after a pause of 0 to 300 us (around the serving
 *                    threads' spin, so that requests race the server going to sleep); prints the
 *                    slowest round trip and how many took over 8 ms (host only) */
#define _GNU_SOURCE
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <pthread.h>
#include <stdatomic.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define OP_ECHO 0x8100

static void echo(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  omprpc_port_recv(port, packets);
  omprpc_port_send(port, packets);
}

static atomic_long ball;
static long bounces;

/* Pins the calling thread to `cpu`, so that the two ends of the bounce sit on two cores. */
static void pin_to(int cpu) {
#ifdef __AMDGCN__
  /* The device pass for AMD GPUs does not see glibc's affinity calls; only the host runs this. */
  (void)cpu;
#else
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
#endif
}

static void *bounce_back(void *arg) {
  (void)arg;
  pin_to(1);
  for (long i = 0; i < bounces; i++) {
    while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1)
      ;
    atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

/* Nanoseconds of a monotonic clock: the host's own (omp_get_wtime ticks in 0.95 us steps there),
 * omp_get_wtime on a GPU. */
static double now_ns(void) {
#if defined(__AMDGCN__) || defined(__NVPTX__)
  return omp_get_wtime() * 1e9;
#else
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
#endif
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#if !defined(__AMDGCN__) && !defined(__NVPTX__)
#pragma omp declare target
/* CPU seconds of this process's threads whose name starts with "omprpc" (the plugin's). */
static double plugin_threads_cpu_seconds(void) {
  double seconds = 0;
  omprpc_test_threads_("omprpc", 1, &seconds);
  return seconds;
}

static void sleep_ns(long ns) {
  struct timespec t = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&t, NULL);
}
#pragma omp end declare target
#endif

#if !defined(__AMDGCN__) && !defined(__NVPTX__)
/* The futex the `wakefloor` sleeper waits on (a count of wakes) and its answer (the wakes seen). */
static atomic_uint floor_bell, floor_answer;
static int floor_reps;

static void *floor_sleeper(void *arg) {
  (void)arg;
  for (unsigned seen = 0; seen < (unsigned)floor_reps;) {
    while (atomic_load(&floor_bell) == seen)
      syscall(SYS_futex, &floor_bell, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    seen = atomic_load(&floor_bell);
    atomic_store_explicit(&floor_answer, seen, memory_order_release);
  }
  return NULL;
}
#endif

static double cpu_seconds(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *mode = argv[1];
  if (OMPRPC_LOOKUP(omprpc_register_handler) && OMPRPC_LOOKUP(omprpc_register_handler)(OP_ECHO, echo, NULL) != 0)
    return 3;
  if (strcmp(mode, "latency") == 0) {
    long n = atol(argv[2]);
    double seconds = 0;
    int active = 0;
#pragma omp target map(from : seconds, active)
    {
      active = omprpc_rpc_active();
      omprpc_packet packet = {{1}};
      for (int i = 0; i < 1000; i++) /* warm up */
        omprpc_call(OP_ECHO, &packet);
      double start = omp_get_wtime();
      for (long i = 0; i < n; i++)
        omprpc_call(OP_ECHO, &packet);
      seconds = omp_get_wtime() - start;
    }
    if (!active)
      return 4;
    printf("ns per round trip: %.1f\n", seconds * 1e9 / (double)n);
  } else if (strcmp(mode, "throughput") == 0 && argc > 3) {
    int threads = atoi(argv[2]);
    long n = atol(argv[3]);
    double start = omp_get_wtime();
#pragma omp target parallel num_threads(threads)
    {
      omprpc_packet packet = {{2}};
      long share = n / omp_get_num_threads();
      for (long i = 0; i < share; i++)
        omprpc_call(OP_ECHO, &packet);
    }
    double seconds = omp_get_wtime() - start;
    printf("calls per second: %.0f\n", (double)n / seconds);
  } else if (strcmp(mode, "cacheline") == 0) {
    bounces = atol(argv[2]);
    pthread_t other;
    pin_to(0);
    pthread_create(&other, NULL, bounce_back, NULL);
    double start = omp_get_wtime();
    for (long i = 0; i < bounces; i++) {
      atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
      while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2)
        ;
    }
    double seconds = omp_get_wtime() - start;
    pthread_join(other, NULL);
    printf("ns per round trip: %.1f\n", seconds * 1e9 / (double)bounces);
  } else if (strcmp(mode, "wake") == 0 && argc > 3) {
    double idle_ms = atof(argv[2]);
    int reps = atoi(argv[3]);
    if (reps < 1 || reps > 1000)
      return 2;
    double trips[1000];
#pragma omp target map(from : trips[0 : reps])
    {
      omprpc_packet packet = {{4}};
      omprpc_call(OP_ECHO, &packet);
      for (int r = 0; r < reps; r++) {
        /* Busy for idle_ms without host calls (a GPU has no usleep). */
        double until = omp_get_wtime() + idle_ms / 1000.0;
        while (omp_get_wtime() < until)
          ;
        double start = now_ns();
        omprpc_call(OP_ECHO, &packet);
        trips[r] = now_ns() - start;
      }
    }
    qsort(trips, (size_t)reps, sizeof trips[0], compare_doubles);
    printf("first call after idling p50 ns: %.0f\n", trips[reps / 2]);
    printf("first call after idling p99 ns: %.0f\n", trips[(reps * 99) / 100]);
#if !defined(__AMDGCN__) && !defined(__NVPTX__)
  } else if (strcmp(mode, "wakefloor") == 0 && argc > 3) {
    double busy_ms = atof(argv[2]);
    floor_reps = atoi(argv[3]);
    if (floor_reps < 1 || floor_reps > 1000)
      return 2;
    double trips[1000];
    pthread_t sleeper;
    pthread_create(&sleeper, NULL, floor_sleeper, NULL);
    for (int r = 0; r < floor_reps; r++) {
      double until = omp_get_wtime() + busy_ms / 1000.0;
      while (omp_get_wtime() < until)
        ;
      double start = now_ns();
      unsigned bell = atomic_fetch_add(&floor_bell, 1) + 1;
      syscall(SYS_futex, &floor_bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
      while (atomic_load_explicit(&floor_answer, memory_order_acquire) != bell)
        ;
      trips[r] = now_ns() - start;
    }
    pthread_join(sleeper, NULL);
    qsort(trips, (size_t)floor_reps, sizeof trips[0], compare_doubles);
    printf("bare wake p50 ns: %.0f\n", trips[floor_reps / 2]);
    printf("bare wake p99 ns: %.0f\n", trips[(floor_reps * 99) / 100]);
  } else if (strcmp(mode, "quiet") == 0 && argc > 2) {
    double quiet = atof(argv[2]), used = -1, lasted = 0;
#pragma omp target map(from : used, lasted)
    {
      omprpc_packet packet = {{5}};
      omprpc_call(OP_ECHO, &packet);
      /* Measure the quiet part only, once the serving threads have settled after the call. */
      sleep_ns(20000000L);
      double before = plugin_threads_cpu_seconds(), start = now_ns();
      sleep_ns((long)(quiet * 1e9));
      lasted = (now_ns() - start) / 1e9;
      used = before < 0 ? -1 : plugin_threads_cpu_seconds() - before;
      omprpc_call(OP_ECHO, &packet);
    }
    if (used < 0)
      return 5;
    printf("plugin threads' cpu per second of a quiet kernel: %.6f\n", used / lasted);
  } else if (strcmp(mode, "lulls") == 0 && argc > 2) {
    int calls = atoi(argv[2]), slow = 0;
    double slowest = 0;
#pragma omp target map(tofrom : slow, slowest)
    {
      omprpc_packet packet = {{6}};
      unsigned seed = 12345;
      for (int i = 0; i < calls; i++) {
        seed = seed * 1103515245u + 12345u;
        sleep_ns((long)((seed >> 8) % 300) * 1000);
        double start = now_ns();
        omprpc_call(OP_ECHO, &packet);
        double took = now_ns() - start;
        slow += took > 8e6;
        slowest = took > slowest ? took : slowest;
      }
    }
    printf("calls: %d, slowest ns: %.0f, over 8 ms: %d\n", calls, slowest, slow);
#endif
  } else if (strcmp(mode, "compute") == 0 && argc > 2) {
    long steps = atol(argv[2]);
    double sums[2] = {0, 0};
    double start = omp_get_wtime();
#pragma omp target teams num_teams(2) thread_limit(1) map(tofrom : sums[0 : 2])
    {
      int team = omp_get_team_num();
      if (team == 0)
        omprpc_puts("computing");
      double x = 1.0 + team;
      for (long i = 0; i < steps; i++)
        x = x * 1.0000001 + 1e-9;
      sums[team % 2] = x;
    }
    printf("seconds of a two-team compute region: %.4f (%g)\n", omp_get_wtime() - start, sums[0] + sums[1]);
  } else if (strcmp(mode, "idle") == 0) {
    int idle_seconds = atoi(argv[2]);
#pragma omp target
    {
      omprpc_packet packet = {{3}};
      omprpc_call(OP_ECHO, &packet);
    }
    double before = cpu_seconds();
    sleep((unsigned)idle_seconds);
    double used = cpu_seconds() - before;
    printf("cpu per second while idle: %.4f\n", used / idle_seconds);
  } else {
    return 2;
  }
  return 0;
}
