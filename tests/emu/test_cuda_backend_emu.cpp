/**
 * @file test_cuda_backend_emu.cpp
 * tests/kernels/test_cuda_backend.cu, unchanged, on the emulated device.
 */
#include "tests/kernels/test_cuda_backend.cu"
