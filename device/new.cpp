/* C++'s operator new and delete in target regions, every form (plain, array, nothrow, aligned, sized),
 * on the device library's malloc, aligned_alloc and free (the device heap the plugin reserves). An
 * aligned throwing form that finds no memory ends the program through the host (abort), as an uncaught
 * std::bad_alloc would: device code has no exceptions (clang-16's plain new returns NULL). Only the
 * GPU passes define anything. */
#include <cstddef>
#include <new>

#include "omprpc_libc_common.h"

#if defined(__NVPTX__) || defined(__AMDGCN__)

extern "C" {
#pragma omp begin declare target
void *malloc(size_t size);
void *aligned_alloc(size_t alignment, size_t size);
void free(void *ptr);
void abort(void);
#pragma omp end declare target
}

#pragma omp begin declare target

static void *omprpc_new_(size_t size, size_t alignment, bool nothrow) {
  void *p = alignment > 16 ? aligned_alloc(alignment, size ? size : 1) : malloc(size ? size : 1);
  if (!p && !nothrow)
    abort();
  return p;
}

/* clang-16 defines the plain and sized forms inline in every OpenMP device unit, on malloc and free
 * (the library's), and on NVIDIA GPUs the nothrow ones too (its <new>); the library defines the rest. */
#ifndef __NVPTX__
void *operator new(size_t size, const std::nothrow_t &) noexcept { return omprpc_new_(size, 0, true); }
void *operator new[](size_t size, const std::nothrow_t &) noexcept { return omprpc_new_(size, 0, true); }
void operator delete(void *p, const std::nothrow_t &) noexcept { free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { free(p); }
#endif
void *operator new(size_t size, std::align_val_t alignment) { return omprpc_new_(size, (size_t)alignment, false); }
void *operator new[](size_t size, std::align_val_t alignment) { return omprpc_new_(size, (size_t)alignment, false); }
void *operator new(size_t size, std::align_val_t alignment, const std::nothrow_t &) noexcept {
  return omprpc_new_(size, (size_t)alignment, true);
}
void *operator new[](size_t size, std::align_val_t alignment, const std::nothrow_t &) noexcept {
  return omprpc_new_(size, (size_t)alignment, true);
}

void operator delete(void *p, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { free(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { free(p); }

#pragma omp end declare target

#endif
