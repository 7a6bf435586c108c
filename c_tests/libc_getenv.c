/* The device library's getenv (device/omprpc_libc.c, built for the host device with its functions
 * named omprpc_libc_*) against glibc's, in a target region run through omprpc on the host device,
 * where the host answers through the plugin's GETENV service. The test driver sets
 * OMPRPC_GETENV_SET, OMPRPC_GETENV_EMPTY (an empty value) and OMPRPC_GETENV_LONG (5,000 bytes), and
 * leaves OMPRPC_GETENV_UNSET unset. For each name: NULL exactly when glibc's is, the same bytes, a
 * copy of the device's own (not glibc's pointer), the same pointer when asked again; a NULL name is
 * NULL. Prints "N checks, M mismatches" and the first mismatches. */
#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

#pragma omp declare target
static long checks, mismatches;

static void check(int ok, const char *what, const char *name) {
  checks++;
  if (ok)
    return;
  if (++mismatches <= 30)
    printf("mismatch: %s for \"%s\"\n", what, name ? name : "(null)");
}
#pragma omp end declare target

int main(void) {
  long counted[3];
#pragma omp target map(from : counted)
  {
    const char *names[] = {"OMPRPC_GETENV_SET", "OMPRPC_GETENV_EMPTY", "OMPRPC_GETENV_LONG",
                           "OMPRPC_GETENV_UNSET", "PATH", "", "=", "OMPRPC_GETENV_SET=", "OMPRPC_GETENV_SE"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
      const char *name = names[i];
      char *ours = omprpc_libc_getenv(name), *theirs = getenv(name);
      check(!ours == !theirs, "set or unset as glibc says", name);
      if (ours && theirs) {
        check(strcmp(ours, theirs) == 0, "glibc's value", name);
        check(ours != theirs, "a copy of the device's own", name);
        check(omprpc_libc_getenv(name) == ours, "the same pointer when asked again", name);
      }
    }
    check(omprpc_rpc_active(), "omprpc's server answering (run through omprpc's plugin)", "");
    check(omprpc_libc_getenv(NULL) == NULL, "NULL for a NULL name", NULL);
    char *set = omprpc_libc_getenv("OMPRPC_GETENV_SET"), *empty = omprpc_libc_getenv("OMPRPC_GETENV_EMPTY");
    char *long_value = omprpc_libc_getenv("OMPRPC_GETENV_LONG");
    check(set && strcmp(set, "value of a set variable") == 0, "the driver's value", "OMPRPC_GETENV_SET");
    check(empty && empty[0] == 0, "an empty value, not NULL", "OMPRPC_GETENV_EMPTY");
    check(long_value && strlen(long_value) == 5000, "5,000 bytes", "OMPRPC_GETENV_LONG");
    check(omprpc_libc_getenv("OMPRPC_GETENV_UNSET") == NULL, "NULL when unset", "OMPRPC_GETENV_UNSET");
    counted[0] = checks;
    counted[1] = mismatches;
    counted[2] = ON_DEVICE();
  }
  return report_checks(counted);
}
