/* omprpc_libc.h: the one opt-in flag of omprpc's device library, for the calls that clang-16 cannot
 * route to a library on a GPU without help. Give it to the compiler, with the library at link:
 *
 *     clang-16 -fopenmp --offload-arch=... -include omprpc_libc.h prog.c -L<dir> -lomprpc-device
 *
 * It changes nothing in the host's pass (nor for the host device). In the GPU passes:
 *   * NVIDIA: clang-16 links its device runtime into each translation unit, binding printf to CUDA's
 *     buffered vprintf there; the definition below replaces it in every unit that includes this
 *     header, so that printf goes through omprpc like the other calls. (AMD needs no help: the
 *     library's definition is the one linked.)
 *   * NVIDIA and AMD: fprintf(stream, format, ...) — a variadic call, which clang-16 refuses to
 *     compile for AMD and nvlink cannot resolve — becomes omprpc_device.h's typed fprintf (at most 31
 *     arguments), printed by the host like printf.
 * Without it, printf on NVIDIA stays CUDA's, and fprintf does not build for a GPU. */
#ifndef OMPRPC_LIBC_H
#define OMPRPC_LIBC_H

#if defined(__NVPTX__) || defined(__AMDGCN__)
#include <stdint.h>
#include <stdio.h> /* declared before the macro below renames fprintf */

#include "omprpc_device.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target
/* The device library's printf, with the stream named. */
int omprpc_libc_vfprintf_struct(FILE *stream, const char *format, void *args, uint32_t size);
#if defined(__NVPTX__)
__attribute__((weak)) int __llvm_omp_vprintf(const char *format, void *args, uint32_t size) {
  return omprpc_libc_vfprintf_struct((FILE *)OMPRPC_STDOUT, format, args, size);
}
#endif
#pragma omp end declare target
#ifdef __cplusplus
}
#endif

#define fprintf(stream, ...) omprpc_fprintf((omprpc_file *)(stream), __VA_ARGS__)
#endif

#endif /* OMPRPC_LIBC_H */
