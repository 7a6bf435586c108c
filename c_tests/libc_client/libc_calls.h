/* Device-side host calls made by LLVM libc 19.1's own GPU code, for tests that must not depend on
 * anything this project wrote on the device side: the RPC client is libc's (`rpc::client`, defined by
 * libc's rpc_client.cpp), and stdio, malloc/free and printf are libc's own implementations
 * (src/stdio/gpu/ files, src/__support/GPU/allocator.cpp, src/gpu/rpc_fprintf.cpp), compiled from
 * LLVM 19.1.7's sources for the host-offload target (tests/libc_client.rs builds them). Only what libc
 * does not offer, or offers broken, is written here, with libc's client, opcodes and packet layouts: a
 * user opcode; exit, whose libc version ends in gpu::end_program(), which is __builtin_unreachable()
 * outside a GPU; and ftell, whose libc 19.1.7 version (src/stdio/gpu/ftell.cpp) sends RPC_FSEEK
 * instead of RPC_FTELL, so that the host seeks with whatever the packet held and returns 0. */
#ifndef LIBC_CALLS_H
#define LIBC_CALLS_H

#include <stdint.h>
#include <stdio.h>

#pragma omp begin declare target
#include "src/__support/GPU/allocator.h"
#include "src/__support/RPC/rpc_client.h"
#include "src/gpu/rpc_fprintf.h"
#include "src/stdio/fclose.h"
#include "src/stdio/feof.h"
#include "src/stdio/ferror.h"
#include "src/stdio/fflush.h"
#include "src/stdio/fgets.h"
#include "src/stdio/fopen.h"
#include "src/stdio/fputs.h"
#include "src/stdio/fread.h"
#include "src/stdio/fseek.h"
#include "src/stdio/fwrite.h"
#include "src/stdio/puts.h"
#include "src/stdio/remove.h"

namespace libc = LIBC_NAMESPACE;

/* The user opcode the host program serves: it returns data[0] * 3 + 1 in each lane's packet. */
constexpr uint16_t OP_TRIPLE = 0x8123;

/* A call of the user opcode through libc's client: one packet each way. */
static inline uint64_t triple_on_host(uint64_t x) {
  uint64_t result = 0;
  libc::rpc::Client::Port port = libc::rpc::client.open<OP_TRIPLE>();
  port.send_and_recv([=](libc::rpc::Buffer *buffer) { buffer->data[0] = x; },
                     [&](libc::rpc::Buffer *buffer) { result = buffer->data[0]; });
  port.close();
  return result;
}

/* libc's exit protocol (src/__support/OSUtil/gpu/exit.cpp): make sure the server listens, send the
 * status, then wait for the host to end the process. */
static inline void exit_through_host(int status) {
  libc::rpc::Client::Port port = libc::rpc::client.open<RPC_EXIT>();
  port.send_and_recv([](libc::rpc::Buffer *) {}, [](libc::rpc::Buffer *) {});
  port.send([&](libc::rpc::Buffer *buffer) { reinterpret_cast<uint32_t *>(buffer->data)[0] = status; });
  port.close();
  for (;;)
    __builtin_ia32_pause();
}

/* ftell as libc means it: RPC_FTELL with the stream, as the server reads it. */
static inline long tell_through_host(FILE *stream) {
  long result = -1;
  libc::rpc::Client::Port port = libc::rpc::client.open<RPC_FTELL>();
  port.send_and_recv([=](libc::rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(stream); },
                     [&](libc::rpc::Buffer *buffer) { result = static_cast<long>(buffer->data[0]); });
  port.close();
  return result;
}

/* printf through libc's rpc_fprintf, which takes the arguments packed as a GPU's varargs are. */
template <typename Args> static inline int print(FILE *stream, const char *format, const Args &args) {
  return libc::rpc_fprintf(stream, format, const_cast<Args *>(&args), sizeof(Args));
}
#pragma omp end declare target

#endif
