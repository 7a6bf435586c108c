/* The device code of the fuzz seed images (scripts/fuzz.sh seeds): two kernels, one generic and one
 * SPMD, and a declare-target global, which give the images `_exec_mode` symbols, an offload entry
 * table and a device environment. */
int g = 7;
#pragma omp declare target to(g)

void run(int *x) {
#pragma omp target map(tofrom : x[0:1])
  { x[0] += 41 + g; }
#pragma omp target teams distribute parallel for map(tofrom : x[0:1])
  for (int i = 0; i < 4; i++)
    if (i == 0)
      x[0]++;
}

int main(void) {
  int x = 1;
  run(&x);
  return x != 50;
}
