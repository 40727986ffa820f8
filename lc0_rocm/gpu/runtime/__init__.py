"""The runtime layer of the GPU package: hip-python only, nothing about chess or networks.

hiperr.py (the one status checker), device.py, memory.py, stream.py (streams, events, graphs),
compiler.py (hipRTC with a disk cache), kernel.py (load and launch), gemm.py (hipBLASLt), dtypes.py
(the storage-type table), observe.py (launch observers for profilers).
"""
