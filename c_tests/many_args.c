/* A target region with 20+ mapped/firstprivate variables, so kernel arguments spill onto the stack. */
#include "common.h"

int main(void) {
  int s1 = 1, s2 = 2, s3 = 3, s4 = 4, s5 = 5, s6 = 6;
  long l1 = 100000000000L, l2 = -99999999999L;
  double d1 = 0.25, d2 = 1.5, d3 = -2.0;
  float f1 = 0.5f;
  char c1 = 'A';
  short h1 = -300;
  int a1[3] = {10, 20, 30}, a2[3] = {40, 50, 60}, a3[3] = {70, 80, 90}, a4[3] = {1, 1, 1};
  double b1[2] = {0.5, 0.5}, b2[2] = {1.0, 2.0};
  long isum = 0;
  double dsum = 0.0;
  int out[20] = {0};
  int on_device = 0;
#pragma omp target map(to : a1, a2, a3, a4, b1, b2) map(tofrom : isum, dsum, on_device) map(from : out) \
    firstprivate(s1, s2, s3, s4, s5, s6, l1, l2, d1, d2, d3, f1, c1, h1)
  {
    on_device = ON_DEVICE();
    isum = s1 + s2 + s3 + s4 + s5 + s6 + (l1 + l2) + c1 + h1;
    for (int i = 0; i < 3; i++)
      isum += a1[i] + a2[i] + a3[i] + a4[i];
    dsum = d1 + d2 + d3 + f1 + b1[0] + b1[1] + b2[0] + b2[1];
    /* Record each argument separately, so a swapped pair would show. */
    out[0] = s1; out[1] = s2; out[2] = s3; out[3] = s4; out[4] = s5; out[5] = s6;
    out[6] = (int)(l1 / 1000000000L); out[7] = (int)(l2 / 1000000000L);
    out[8] = (int)(d1 * 100); out[9] = (int)(d2 * 100); out[10] = (int)(d3 * 100);
    out[11] = (int)(f1 * 100); out[12] = c1; out[13] = h1;
    out[14] = a1[2]; out[15] = a2[2]; out[16] = a3[2]; out[17] = a4[2];
    out[18] = (int)(b1[1] * 100); out[19] = (int)(b2[1] * 100);
  }
  printf("integer sum: %ld\n", isum);
  printf("double sum: %.3f\n", dsum);
  printf("arguments:");
  for (int i = 0; i < 20; i++)
    printf(" %d", out[i]);
  printf("\n");

  /* Same again with many scalars mapped tofrom and modified on the device. */
  int m1 = 1, m2 = 2, m3 = 3, m4 = 4, m5 = 5, m6 = 6, m7 = 7, m8 = 8, m9 = 9, m10 = 10;
  int m11 = 11, m12 = 12, m13 = 13, m14 = 14, m15 = 15, m16 = 16, m17 = 17, m18 = 18, m19 = 19, m20 = 20;
#pragma omp target map(tofrom : m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, \
                           m17, m18, m19, m20)
  {
    m1 *= 2; m2 *= 3; m3 *= 4; m4 *= 5; m5 *= 6; m6 *= 7; m7 *= 8; m8 *= 9; m9 *= 10; m10 *= 11;
    m11 *= 12; m12 *= 13; m13 *= 14; m14 *= 15; m15 *= 16; m16 *= 17; m17 *= 18; m18 *= 19; m19 *= 20;
    m20 *= 21;
  }
  printf("tofrom scalars: %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", m1, m2, m3, m4, m5,
         m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20);
  printf("ran on device: %d\n", on_device);
  return 0;
}
