// Host services from C++ target code: a class method and a lambda call the device-side client,
// and a host handler is registered from C++.
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
    omprpc_packet packet = {{21}};
    omprpc_call(0x8123, &packet);
    doubled = static_cast<long>(packet.data[0]);
  }
  printf("doubled on the host: %ld\n", doubled);
  return 0;
}
