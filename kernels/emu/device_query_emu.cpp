/**
 * @file device_query_emu.cpp
 * kernels/cuda/device_query.cu, unchanged, built against the emulated device.
 */
#include "kernels/cuda/device_query.cu"
