/* omprpc_libc.h: the one opt-in flag of omprpc's device library, for the calls that clang-16 cannot
 * route to a library on a GPU without help. Give it to the compiler, with the library at link:
 *
 *     clang-16 -fopenmp --offload-arch=... -include omprpc_libc.h prog.c -L<dir> -lomprpc-device
 *
 * It changes nothing in the host's pass (nor for the host device). In the GPU passes:
 *   * NVIDIA: clang-16 links its device runtime into each translation unit, binding printf to CUDA's
 *     buffered vprintf there, and assert to the runtime's __assert_fail (CUDA's printf, then a trap);
 *     the definitions below replace them in every unit that includes this header, so that printf and
 *     assert go through omprpc like the other calls. (AMD needs no help: the library's definitions
 *     are the ones linked.)
 *   * NVIDIA and AMD: fprintf(stream, format, ...) — a variadic call, which clang-16 refuses to
 *     compile for AMD and nvlink cannot resolve — becomes omprpc_device.h's typed fprintf (at most 31
 *     arguments), printed by the host like printf. snprintf, sprintf and asprintf likewise become
 *     omprpc_device.h's typed omprpc_snprintf, omprpc_sprintf and the library's asprintf (at most 31
 *     arguments in C), formatted by the host's C library: the bytes and result of glibc's snprintf;
 *     asprintf's text comes from the library's malloc, for the program's free. vsnprintf and
 *     vsprintf cannot be had: clang-16 cannot compile va_arg for a GPU (docs/c-library.md).
 *   * NVIDIA and AMD: sscanf, fscanf and scanf become omprpc_device.h's typed omprpc_sscanf,
 *     omprpc_fscanf and omprpc_scanf (at most 31 pointers in C), parsed by the host's glibc: its
 *     result and stored values. vsscanf, vfscanf and vscanf cannot be had, for the same reason.
 * Without it, printf and assert on NVIDIA stay CUDA's, and fprintf does not build for a GPU. */
#ifndef OMPRPC_LIBC_H
#define OMPRPC_LIBC_H

#if defined(__NVPTX__) || defined(__AMDGCN__)
#include <assert.h> /* __assert_fail declared as glibc declares it, before its definition below */
#include <stdint.h>
#include <stdio.h> /* declared before the macro below renames fprintf */
#ifdef __cplusplus
#include <cstdio> /* now, as its #undefs of fprintf, snprintf and sprintf would end the macros below */
#endif

#include "omprpc_device.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target
/* The device library's printf, with the stream named. */
int omprpc_libc_vfprintf_struct(FILE *stream, const char *format, void *args, uint32_t size);
/* The device library's asprintf: args[0] is the format; the text comes from the library's malloc. */
int omprpc_libc_asprintf_args(char **out, const omprpc_arg *args, uint32_t count);
#if defined(__NVPTX__)
__attribute__((weak)) int __llvm_omp_vprintf(const char *format, void *args, uint32_t size) {
  return omprpc_libc_vfprintf_struct((FILE *)OMPRPC_STDOUT, format, args, size);
}
/* The device library's report of a failed assert. */
void omprpc_libc_report_assertion(const char *expression, const char *file, unsigned int line,
                                  const char *function);
#ifdef __cplusplus
#define OMPRPC_LIBC_NOTHROW_ __THROW /* as glibc declares it (in C its attribute may not go here) */
#else
#define OMPRPC_LIBC_NOTHROW_
#endif
__attribute__((weak, noreturn)) void __assert_fail(const char *expression, const char *file, unsigned int line,
                                                   const char *function) OMPRPC_LIBC_NOTHROW_ {
  omprpc_libc_report_assertion(expression, file, line, function);
  __builtin_unreachable();
}
#endif
#pragma omp end declare target
#ifdef __cplusplus
}
#endif

#define fprintf(stream, ...) omprpc_fprintf((omprpc_file *)(stream), __VA_ARGS__)
#define snprintf(buffer, size, ...) omprpc_snprintf(buffer, size, __VA_ARGS__)
#define sprintf(buffer, ...) omprpc_sprintf(buffer, __VA_ARGS__)
#define sscanf(string, ...) omprpc_sscanf(string, __VA_ARGS__)
#define fscanf(stream, ...) omprpc_fscanf((omprpc_file *)(stream), __VA_ARGS__)
#define scanf(...) omprpc_scanf(__VA_ARGS__)
#ifdef __cplusplus
/* std::snprintf(...) becomes std::omprpc_snprintf(...), and so on. */
namespace std {
using ::omprpc_fprintf;
using ::omprpc_fscanf;
using ::omprpc_scanf;
using ::omprpc_snprintf;
using ::omprpc_sprintf;
using ::omprpc_sscanf;
} // namespace std
#pragma omp begin declare target
template <typename... A> static inline int omprpc_libc_asprintf(char **out, const char *format, A... args) {
  const omprpc_arg list[] = {omprpc_arg_p_(format), omprpc_make_arg(args)...};
  return omprpc_libc_asprintf_args(out, list, (uint32_t)(1 + sizeof...(A)));
}
#pragma omp end declare target
#define asprintf(out, ...) omprpc_libc_asprintf(out, __VA_ARGS__)
#else
#define asprintf(out, ...)                                                                                \
  omprpc_libc_asprintf_args((out), (const omprpc_arg[]){OMPRPC_TO_BUFFER_ARGS_(__VA_ARGS__)},            \
                            OMPRPC_TO_BUFFER_COUNT_(__VA_ARGS__))
#endif
#endif

#endif /* OMPRPC_LIBC_H */
