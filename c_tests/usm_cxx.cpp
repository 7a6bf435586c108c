// C++ globals with std::string members in a program that requires unified shared memory: the device
// reads the host's objects (their strings live on the host's heap) and changes them in place.
#include <string>

#include "common.h"

#pragma omp requires unified_shared_memory

struct Named {
  std::string name;
  int value;
};

#pragma omp begin declare target
Named first{"a name long enough to live on the host's heap, not inside the string", 5};
Named second{"short", 6};
#pragma omp end declare target

int main() {
  unsigned long length = 0;
  int values = 0;
  char letters[3] = {0};
#pragma omp target map(from : length, values, letters)
  {
    length = first.name.size() + second.name.size();
    values = first.value + second.value;
    letters[0] = first.name[2];
    letters[1] = second.name[4];
    second.value = 60;
  }
  printf("length %lu, values %d, letters %s, second.value now %d\n", length, values, letters, second.value);
  return 0;
}
