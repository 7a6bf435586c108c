/* RPC benchmark (run by benches/rpc.rs):
 *   latency N        one device thread makes N echo calls; prints ns per round trip
 *   throughput T N   T device threads make N calls in all; prints calls per second
 *   cacheline N      two host threads bounce a cache line N times; prints ns per round trip
 *   idle S           after one host call, the device idles S seconds; prints CPU used per second
 *   wake MS R        R times, a device thread idles MS milliseconds inside its kernel, then makes one
 *                    call; prints that call's round trip (p50 and p99, ns) */
#define _GNU_SOURCE
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
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
    long idle_ms = atol(argv[2]);
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
        double until = omp_get_wtime() + (double)idle_ms / 1000.0;
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
