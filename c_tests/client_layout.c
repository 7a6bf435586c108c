/* Prints the layout of the device header's client structures, for tests/header.rs to compare with the
 * plugin's description of the mailbox (src/rpc/protocol/mailbox.rs) and with LLVM libc's client object; then
 * each of the header's libc opcodes beside libc 19.1's own, and the lane count the header exports. */
#include <stddef.h>
#include <stdio.h>

#include "llvmlibc_rpc_opcodes.h"
#include "omprpc_device.h"

#define SAME(name) printf("opcode " #name " %d %d\n", (int)OMPRPC_OP_##name, (int)RPC_##name)

int main(void) {
  printf("client %zu\n", sizeof(omprpc_client));
  printf("inbox %zu outbox %zu header %zu packet %zu lock %zu\n", offsetof(omprpc_client, inbox),
         offsetof(omprpc_client, outbox), offsetof(omprpc_client, header), offsetof(omprpc_client, packet),
         offsetof(omprpc_client, lock));
  printf("header %zu opcode %zu\n", sizeof(omprpc_header), offsetof(omprpc_header, opcode));
  printf("packet %zu\n", sizeof(omprpc_packet));
  SAME(EXIT);
  SAME(WRITE_TO_STDOUT);
  SAME(WRITE_TO_STDERR);
  SAME(WRITE_TO_STREAM);
  SAME(WRITE_TO_STDOUT_NEWLINE);
  SAME(READ_FROM_STREAM);
  SAME(READ_FGETS);
  SAME(OPEN_FILE);
  SAME(CLOSE_FILE);
  SAME(MALLOC);
  SAME(FREE);
  SAME(ABORT);
  SAME(FEOF);
  SAME(FERROR);
  SAME(CLEARERR);
  SAME(FSEEK);
  SAME(FTELL);
  SAME(FFLUSH);
  SAME(UNGETC);
  SAME(REMOVE);
  printf("own PRINTF %d ASSERT_FAIL %d HOST_FUNCTION %d\n", (int)OMPRPC_OP_PRINTF, (int)OMPRPC_OP_ASSERT_FAIL,
         (int)OMPRPC_OP_HOST_FUNCTION);
  printf("own STRTOD %d\n", (int)OMPRPC_OP_STRTOD);
  printf("own SCAN %d\n", (int)OMPRPC_OP_SCAN);
  printf("own GETENV %d\n", (int)OMPRPC_OP_GETENV);
  printf("own FORMAT_TO_BUFFER %d\n", (int)OMPRPC_OP_FORMAT_TO_BUFFER);
  printf("lanes %u\n", __omprpc_rpc_lanes);
  return 0;
}
