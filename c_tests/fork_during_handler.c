/* A child forked while a user handler runs on the parent's serving thread: in the child that handler
 * is not running (its thread did not survive the fork), so the child's own calls of the same opcode
 * must be served, not left waiting for a handler that will never finish. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define OP_SLOW 0x8207

static void slow(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  omprpc_port_recv(port, packets);
  usleep(400 * 1000);
  packets[0].data[0] += 1;
  omprpc_port_send(port, packets);
}

static long call_slow(long value) {
  long result = 0;
#pragma omp target map(from : result)
  {
    omprpc_packet packet = {{(uint64_t)value}};
    omprpc_call(OP_SLOW, &packet);
    result = (long)packet.data[0];
  }
  return result;
}

static void *in_parent_thread(void *arg) {
  *(long *)arg = call_slow(41);
  return NULL;
}

int main(void) {
  if (!OMPRPC_LOOKUP(omprpc_register_handler) || OMPRPC_LOOKUP(omprpc_register_handler)(OP_SLOW, slow, NULL) != 0)
    return 2;
  if (call_slow(1) != 2) /* offloads once before the fork */
    return 3;
  long parent_result = 0;
  pthread_t thread;
  pthread_create(&thread, NULL, in_parent_thread, &parent_result);
  usleep(150 * 1000); /* the handler is running now */
  pid_t child = fork();
  if (child < 0)
    return 4;
  if (child == 0) {
    alarm(30); /* a hang ends the child with SIGALRM instead of blocking the test */
    long got = call_slow(7);
    printf("child got %ld\n", got);
    fflush(stdout);
    _exit(got == 8 ? 0 : 5);
  }
  pthread_join(thread, NULL);
  int status = 0;
  waitpid(child, &status, 0);
  printf("parent got %ld\n", parent_result);
  printf("child %s %d\n", WIFEXITED(status) ? "exited with" : "killed by signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0 && parent_result == 42);
}
