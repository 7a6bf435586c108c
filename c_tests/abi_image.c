/* Not an OpenMP program: a hand-made host device image (a plain shared object) for the direct-ABI
 * tests in tests/abi_bad_input.rs, with kernels of several arities and a global. */
long image_counter = 5;

void add_one(long *value) { *value += 1; }

void do_nothing(void) {}

/* Twenty arguments: fourteen of them travel on the stack. */
void sum20(long *out, long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8, long a9,
           long a10, long a11, long a12, long a13, long a14, long a15, long a16, long a17, long a18,
           long a19) {
  *out = a1 + 2 * a2 + 3 * a3 + 4 * a4 + 5 * a5 + 6 * a6 + 7 * a7 + 8 * a8 + 9 * a9 + 10 * a10 +
         11 * a11 + 12 * a12 + 13 * a13 + 14 * a14 + 15 * a15 + 16 * a16 + 17 * a17 + 18 * a18 +
         19 * a19;
}

#ifdef SECOND
/* Only in the second variant: a different image, to check that a failed load leaves nothing behind. */
void second_kernel(long *value) { *value = 2; }
#endif
