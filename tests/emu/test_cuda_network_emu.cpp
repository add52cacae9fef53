/**
 * @file test_cuda_network_emu.cpp
 * tests/kernels/test_cuda_network.cu, unchanged, on the emulated device.
 */
#include "tests/kernels/test_cuda_network.cu"
