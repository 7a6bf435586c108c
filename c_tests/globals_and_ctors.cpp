// C++ declare target objects with constructors and destructors, and a declare target link variable.
#include "common.h"

#pragma omp declare target
struct Table {
  int n;
  int vals[8];
  Table(int count, int step) : n(count) {
    for (int i = 0; i < 8; i++)
      vals[i] = i < n ? (i + 1) * step : 0;
  }
  ~Table() { n = -1; } // runs at unload; prints nothing
  int sum() const {
    int s = 0;
    for (int i = 0; i < n; i++)
      s += vals[i];
    return s;
  }
};
static Table g_table(5, 3);

struct Tracker {
  int live;
  Tracker() : live(1) {}
  ~Tracker() { live = 0; }
};
Tracker g_tracker;

int twice(int x) { return 2 * x; }
#pragma omp end declare target

// A link variable: the device accesses it through a mapping made at the region, not a device copy.
int g_linked[4] = {2, 3, 5, 7};
#pragma omp declare target link(g_linked)

int main() {
  int on_device = 0, n = 0, tsum = 0, live = 0, doubled = 0;
#pragma omp target map(from : on_device, n, tsum, live, doubled)
  {
    on_device = ON_DEVICE();
    n = g_table.n;
    tsum = g_table.sum();
    live = g_tracker.live;
    // A function-local static with a constructor, first used on the device.
    static Table local(3, 10);
    doubled = twice(local.sum());
  }
  printf("device g_table: n=%d sum=%d, g_tracker.live=%d, local static doubled=%d\n", n, tsum, live, doubled);

  // Change the device object, and show the host object is separate.
#pragma omp target
  g_table.vals[0] = 100;
#pragma omp target map(from : tsum)
  tsum = g_table.sum();
  printf("device g_table sum after change: %d, host g_table sum: %d\n", tsum, g_table.sum());

  int lsum = 0;
#pragma omp target map(tofrom : g_linked, lsum)
  {
    for (int i = 0; i < 4; i++) {
      lsum += g_linked[i];
      g_linked[i] *= 10;
    }
  }
  printf("link: device sum=%d, host after region: %d %d %d %d\n", lsum, g_linked[0], g_linked[1],
         g_linked[2], g_linked[3]);
  printf("ran on device: %d\n", on_device);
  return 0;
}
