// C++ in target regions: class methods, a lambda, templates, and a declare target global object's constructor.
#include "common.h"

#pragma omp declare target
struct Counter {
  int v;
  Counter() : v(7) {}
  void bump(int by) { v += by; }
};
Counter g_counter;

class Accumulator {
public:
  explicit Accumulator(int base) : base_(base), total_(0) {}
  void add(int x) { total_ += base_ * x; }
  int total() const { return total_; }

private:
  int base_;
  int total_;
};

template <typename T> T dot(const T *a, const T *b, int n) {
  T s = T(0);
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

template <int N> struct Fixed {
  int data[N];
  int sum() const {
    int s = 0;
    for (int i = 0; i < N; i++)
      s += data[i];
    return s;
  }
};
#pragma omp end declare target

int main() {
  int on_device = 0, counter_seen = 0, counter_after = 0, acc_total = 0;
  Accumulator acc(3);
#pragma omp target map(tofrom : acc) map(from : on_device, counter_seen, counter_after)
  {
    on_device = ON_DEVICE();
    counter_seen = g_counter.v; // 7 only if the constructor ran for the device copy
    g_counter.bump(5);
    counter_after = g_counter.v;
    for (int i = 1; i <= 4; i++)
      acc.add(i);
  }
  acc_total = acc.total();
  printf("device g_counter: %d, after bump: %d, host g_counter: %d\n", counter_seen, counter_after,
         g_counter.v);
  printf("accumulator total: %d\n", acc_total);

  // A lambda defined on the host, captured by value and called on the device.
  int scale = 4;
  auto f = [scale](int x) { return scale * x + 1; };
  int lam[5] = {0};
#pragma omp target map(from : lam)
  for (int i = 0; i < 5; i++)
    lam[i] = f(i);
  printf("lambda: %d %d %d %d %d\n", lam[0], lam[1], lam[2], lam[3], lam[4]);

  // A lambda defined inside the region, capturing a mapped array by reference.
  int arr[4] = {1, 2, 3, 4}, inner = 0;
#pragma omp target map(to : arr) map(tofrom : inner)
  {
    auto add_sq = [&](int i) { inner += arr[i] * arr[i]; };
    for (int i = 0; i < 4; i++)
      add_sq(i);
  }
  printf("inner lambda: %d\n", inner);

  // Templates instantiated for int and double.
  int ia[3] = {1, 2, 3}, ib[3] = {4, 5, 6}, idot = 0;
  double da[3] = {0.5, 1.5, 2.5}, db[3] = {2.0, 2.0, 2.0}, ddot = 0.0;
  Fixed<6> fx = {{1, 1, 2, 3, 5, 8}};
  int fsum = 0;
#pragma omp target map(to : ia, ib, da, db, fx) map(from : idot, ddot, fsum)
  {
    idot = dot(ia, ib, 3);
    ddot = dot(da, db, 3);
    fsum = fx.sum();
  }
  printf("templates: int dot %d, double dot %.2f, Fixed<6> sum %d\n", idot, ddot, fsum);
  printf("ran on device: %d\n", on_device);
  return 0;
}
