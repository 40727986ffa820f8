"""The ROCm runtime on hip-python: device, memory, streams/events, hipRTC kernels, hipBLASLt GEMMs."""
