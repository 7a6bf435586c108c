/* stdbit.h for target regions (C23's 70 bit functions, LLVM libc's GPU list's stdbit.h), on the
 * device: the definitions omprpc_stdbit.h holds, with external linkage under the C library's names,
 * which the header declares in GPU passes (in other passes it defines the same code static inline;
 * see the header for their meaning). Each is a few instructions on the compiler's count-leading-zeros,
 * count-trailing-zeros and population-count builtins, which both GPU targets have. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED

#include "omprpc_stdbit.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

OMPRPC_STDBIT_DEFINITIONS_(, OMPRPC_LIBC_)

#pragma omp end declare target
#ifdef __cplusplus
}
#endif
#endif
