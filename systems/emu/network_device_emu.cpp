/**
 * @file network_device_emu.cpp
 * systems/cuda/network_device.cu, unchanged, built against the emulated device.
 */
#include "systems/cuda/network_device.cu"
