/* An ordinary OpenMP program with C library calls in its target regions: printf, a file written with
 * fopen/fputs/fclose, malloc/free and assert, and nothing from omprpc in its source. On the host device
 * it runs through omprpc as through the stock plugin; for a GPU it links with omprpc's device library
 * (-lomprpc-device), which carries each call to the host. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int sum = 0;
#pragma omp target map(tofrom : sum)
  {
    int *squares = malloc(10 * sizeof(int));
    assert(squares != NULL);
    for (int i = 0; i < 10; ++i)
      squares[i] = i * i;
    for (int i = 0; i < 10; ++i)
      sum += squares[i];
    free(squares);
    printf("target region: the sum of the first ten squares is %d (%s)\n", sum, "printf");
    FILE *f = fopen("unchanged_offload.txt", "w");
    if (f) {
      fputs("written by a target region\n", f);
      fclose(f);
    }
  }
  assert(sum == 285);
  printf("host: sum %d\n", sum);
  return 0;
}
