/* A kernel that reads the hidden arguments of code object v5: the work-group size (which v5 passes as
 * an argument rather than in the dispatch packet) and the block count, through the implicit-argument
 * pointer. */
__kernel void geometry(__global unsigned *out) {
  if (__builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workgroup_id_x() == 0) {
    __constant unsigned *implicit = (__constant unsigned *)__builtin_amdgcn_implicitarg_ptr();
    out[0] = implicit[0];
    out[1] = __builtin_amdgcn_workgroup_size_x();
  }
}
