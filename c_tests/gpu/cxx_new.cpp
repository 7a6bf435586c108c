/* operator new and delete in every form in a target region: plain, array, nothrow, aligned, aligned
 * nothrow, and the deletes that match (sized ones need -fsized-deallocation in clang-16). Built for each GPU target with -lomprpc-device by
 * tests/device_library.rs, which checks that the device link finds each defined. */
#include <cstdio>
#include <new>

struct alignas(64) Wide {
  double lanes[8];
};

int main(int argc, char **) {
  long status = 0;
#pragma omp target map(tofrom : status)
  {
    int *one = new int(argc);
    int *many = new int[argc + 4];
    int *quiet = new (std::nothrow) int(3);
    int *quiet_many = new (std::nothrow) int[argc + 2];
    Wide *wide = new Wide();
    Wide *wides = new Wide[argc + 1];
    Wide *quiet_wide = new (std::nothrow) Wide();
    Wide *quiet_wides = new (std::nothrow) Wide[argc + 1];
    void *raw = ::operator new(24, std::align_val_t(128));
    status += *one + (many != nullptr) + (quiet != nullptr) + (quiet_many != nullptr) +
              (((unsigned long)wide % 64) == 0) + (((unsigned long)wides % 64) == 0) +
              (quiet_wide != nullptr) + (quiet_wides != nullptr) + (((unsigned long)raw % 128) == 0);
    delete one;
    delete[] many;
    ::operator delete(quiet, std::nothrow);
    ::operator delete[](quiet_many, std::nothrow);
    delete wide;
    delete[] wides;
    ::operator delete(quiet_wide, std::align_val_t(64), std::nothrow);
    ::operator delete[](quiet_wides, std::align_val_t(64), std::nothrow);
    ::operator delete(raw, std::align_val_t(128));
  }
  std::printf("%ld\n", status);
  return 0;
}
