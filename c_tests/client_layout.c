/* Prints the layout of the device header's client structures, for tests/header.rs to compare with the
 * plugin's description of the mailbox (src/rpc/mailbox.rs) and with LLVM libc's client object. */
#include <stddef.h>
#include <stdio.h>

#include "omprpc_device.h"

int main(void) {
  printf("client %zu\n", sizeof(omprpc_client));
  printf("inbox %zu outbox %zu header %zu packet %zu lock %zu\n", offsetof(omprpc_client, inbox),
         offsetof(omprpc_client, outbox), offsetof(omprpc_client, header), offsetof(omprpc_client, packet),
         offsetof(omprpc_client, lock));
  printf("header %zu opcode %zu\n", sizeof(omprpc_header), offsetof(omprpc_header, opcode));
  printf("packet %zu\n", sizeof(omprpc_packet));
  return 0;
}
