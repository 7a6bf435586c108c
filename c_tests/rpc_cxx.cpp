// Host services from C++ target code: a class method and a lambda call the device-side client,
// snprintf, sprintf and asprintf through their variadic templates, and a host handler is registered
// from C++.
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"

#pragma omp declare target
struct Reporter {
  int id;
  void report(double value) const { omprpc_printf("reporter %d: %.1f\n", id, value); }
};
#pragma omp end declare target

static void twice(omprpc_port *port, void *) {
  omprpc_packet packet[64];
  omprpc_port_recv(port, packet);
  packet[0].data[0] *= 2;
  omprpc_port_send(port, packet);
}

int main() {
  if (OMPRPC_LOOKUP(omprpc_register_handler)(0x8123, twice, nullptr) != 0)
    return 1;
  long doubled = 0;
#pragma omp target map(from : doubled)
  {
    Reporter r{7};
    auto show = [&](int i) { r.report(i * 1.5); };
    for (int i = 0; i < 3; i++)
      show(i);
    char text[32];
    int n = omprpc_snprintf(text, 8, "%s=%d|%.2f", "cut", 12345, 0.5);
    omprpc_printf("snprintf: %d \"%s\"\n", n, text);
    n = omprpc_sprintf(text, "%-6s|%+d", "all", 7);
    omprpc_printf("sprintf: %d \"%s\"\n", n, text);
    char *made = nullptr;
    n = omprpc_asprintf(&made, "%x-%c", 255u, 'z');
    omprpc_printf("asprintf: %d \"%s\"\n", n, made);
    omprpc_free(made);
    omprpc_packet packet = {{21}};
    omprpc_call(0x8123, &packet);
    doubled = static_cast<long>(packet.data[0]);
  }
  printf("doubled on the host: %ld\n", doubled);
  return 0;
}
