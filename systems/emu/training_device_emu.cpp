/**
 * @file training_device_emu.cpp
 * systems/cuda/training_device.cu, unchanged, built against the emulated device.
 */
#include "systems/cuda/training_device.cu"
