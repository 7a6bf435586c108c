/* What the device library's sources share: the names they define and the frame every definition
 * sits in. A GPU pass defines the C library's own names; the host's pass (and the host device, whose
 * target regions call the host's C library directly) defines nothing. Tests and fuzzing build the same
 * sources for the host with OMPRPC_LIBC_PREFIX defined, which names every function omprpc_libc_<name>
 * instead, so that the library's code runs beside the host's C library and can be compared with it. */
#ifndef OMPRPC_LIBC_COMMON_H
#define OMPRPC_LIBC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef OMPRPC_LIBC_PREFIX
#define OMPRPC_LIBC_(name) omprpc_libc_##name
#else
#define OMPRPC_LIBC_(name) name
#endif

/* Whether this pass defines the library (a GPU pass, or a host build for tests). */
#if defined(__NVPTX__) || defined(__AMDGCN__) || defined(OMPRPC_LIBC_PREFIX)
#define OMPRPC_LIBC_DEFINED 1
#endif

/* Linux's values, which the program's <errno.h> names on the device as on the host. */
#define OMPRPC_LIBC_EINVAL 22
#define OMPRPC_LIBC_ERANGE 34

#endif
