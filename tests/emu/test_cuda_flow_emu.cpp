/**
 * @file test_cuda_flow_emu.cpp
 * tests/kernels/test_cuda_flow.cu, unchanged, on the emulated device (its warps' lanes are
 * fibers that meet at each __syncwarp and exchange values through shuffles).
 */
#include "tests/kernels/test_cuda_flow.cu"
