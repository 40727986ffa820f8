"""The network layer of the GPU package: lc0's nets as device layers over the runtime (`..runtime`).

kernels.py (host launchers of lc0_rocm/kernels/*.hip, one activation table), layers.py (context,
workspace, `Linear`, `Norm`, the calling convention every layer follows), attention.py / conv.py /
heads.py (the layers of each part of a net), network.py (`GpuNetwork`: one device, slots, streams,
graphs), multi.py (`MultiGpuNetwork`: a batch split across devices).
"""
