"""The immutable description of an Lc0 network: dimensions, formats, activations and float32 weights.

The loader (`net.loader`) builds it from a `.pb.gz` file after lc0's load-time fix-ups, batch-norm
folding and multi-head selection; every backend (numpy reference, ONNX export, GPU runner) builds its
layers from it and never looks at the protobuf again.

Conventions (all arrays are float32 numpy, C-contiguous, read-only):
- `Dense.w` is [out, in] and computes `y = x @ w.T + b` (`b` may be None: no bias).
- `Conv.w` is [out, in, k, k] (OIHW, H = rank, W = file, side-to-move frame), batch norm folded
  into `w` and `b`; `b` always present (zeros where the file had none).
- Token tensors of an attention body are square-major: [64 squares, channels]. The gating tensors
  are converted by the loader to that layout ([64, E]), unlike the file's channel-major storage.
- Activation names: "relu", "relu2", "mish", "swish", "selu", "tanh", "sigmoid", "none".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

ACTIVATIONS = ("relu", "relu2", "mish", "swish", "selu", "tanh", "sigmoid", "none")


@dataclass(frozen=True)
class Dense:
    """Fully connected layer: y = x @ w.T + b; w is [out, in], b is [out] or None."""

    w: np.ndarray
    b: Optional[np.ndarray] = None

    @property
    def n_out(self) -> int:
        return self.w.shape[0]

    @property
    def n_in(self) -> int:
        return self.w.shape[1]


@dataclass(frozen=True)
class Conv:
    """Convolution with batch norm folded in: w is [out, in, k, k], b is [out]; padding k // 2."""

    w: np.ndarray
    b: np.ndarray

    @property
    def n_out(self) -> int:
        return self.w.shape[0]

    @property
    def n_in(self) -> int:
        return self.w.shape[1]

    @property
    def kernel(self) -> int:
        return self.w.shape[2]


@dataclass(frozen=True)
class LayerNorm:
    """Per-token layer norm over channels (population variance): beta + gamma * (x - mu) / sqrt(var + eps)."""

    gamma: np.ndarray
    beta: np.ndarray
    eps: float


@dataclass(frozen=True)
class FFN:
    """Two dense layers; `activation` is applied after dense1 only."""

    dense1: Dense
    dense2: Dense
    activation: str


@dataclass(frozen=True)
class Smolgen:
    """Per-layer smolgen: compress (no bias) -> flatten -> dense1+act -> LN -> dense2+act -> LN.

    `compress.w` is [hc, E]; `dense1.w` is [hs, 64*hc] (input index square*hc + c); `dense2.w` is
    [heads*g, hs]. The global weight generator (`AttentionBody.smolgen_global`) turns each head's g
    values into a 64x64 bias. Both LNs use eps 1e-3.
    """

    compress: Dense
    dense1: Dense
    ln1: LayerNorm
    dense2: Dense
    ln2: LayerNorm
    activation: str


@dataclass(frozen=True)
class MultiHeadAttention:
    """Q, K, V ([dm, E] each), output projection dense ([E, dm]), head count, optional smolgen."""

    q: Dense
    k: Dense
    v: Dense
    out: Dense
    heads: int
    smolgen: Optional[Smolgen] = None

    @property
    def d_model(self) -> int:
        return self.q.n_out

    @property
    def depth(self) -> int:
        return self.d_model // self.heads


@dataclass(frozen=True)
class EncoderLayer:
    """x1 = LN1(x + alpha*MHA(x)); x = LN2(x1 + alpha*FFN(x1)). alpha lives in the owner."""

    mha: MultiHeadAttention
    ln1: LayerNorm
    ffn: FFN
    ln2: LayerNorm


@dataclass(frozen=True)
class SEUnit:
    """Squeeze-excitation: fc1 [S, F] (+act), fc2 [2F, S]; first F outputs -> sigmoid gamma, last F -> beta."""

    fc1: Dense
    fc2: Dense


@dataclass(frozen=True)
class ResidualBlock:
    conv1: Conv
    conv2: Conv
    se: Optional[SEUnit] = None


@dataclass(frozen=True)
class ConvTower:
    """Classical residual tower: input 3x3 conv (112 -> F) then residual blocks; `activation` everywhere."""

    input: Conv
    blocks: tuple[ResidualBlock, ...]
    activation: str

    @property
    def filters(self) -> int:
        return self.input.n_out


@dataclass(frozen=True)
class AttentionBody:
    """Transformer body over 64 square tokens.

    embedding: "pe_map" (112 planes ++ fixed 64-value table, also used for lc0's NONE),
    "pe_dense" (112 planes ++ `preproc` output), or "tower" (tokens = `ConvTower` output channels).
    `preproc.w` is [64*D, 768] (input square*12 + plane, output square*D + d).
    `gate_mult`/`gate_add` are [64, E] square-major (both present or both None).
    `emb_ln`, `emb_ffn`, `emb_ffn_ln` are present only for pe_dense nets.
    `alpha` = (2 * len(encoders)) ** -0.25; `smolgen_global` is [4096, g] or None.
    """

    embedding: str
    emb: Dense
    activation: str
    encoders: tuple[EncoderLayer, ...]
    alpha: float
    preproc: Optional[Dense] = None
    emb_ln: Optional[LayerNorm] = None
    gate_mult: Optional[np.ndarray] = None
    gate_add: Optional[np.ndarray] = None
    emb_ffn: Optional[FFN] = None
    emb_ffn_ln: Optional[LayerNorm] = None
    smolgen_global: Optional[np.ndarray] = None

    @property
    def embedding_size(self) -> int:
        return self.emb.n_out


@dataclass(frozen=True)
class AttentionPolicyHead:
    """Attention policy: embedding (+act) -> optional encoders (alpha 1) -> wq, wk -> 64x64 + promotions.

    `embedding_activation` is the body's default activation for attention bodies, "selu" for conv
    bodies. `ppo` is [4, pdm] (queen, rook, bishop, shared knight offset).
    """

    embedding: Dense
    embedding_activation: str
    encoders: tuple[EncoderLayer, ...]
    wq: Dense
    wk: Dense
    ppo: np.ndarray


@dataclass(frozen=True)
class ConvPolicyHead:
    """Convolutional policy: conv1 3x3 F->F (+act), conv2 3x3 F->80 (first 73 planes used), map gather."""

    conv1: Conv
    conv2: Conv
    activation: str


@dataclass(frozen=True)
class ClassicalPolicyHead:
    """Classical policy: 1x1 conv F->PC (+act), flatten NCHW, fc -> 1858 logits."""

    conv: Conv
    fc: Dense
    activation: str


PolicyHead = Union[AttentionPolicyHead, ConvPolicyHead, ClassicalPolicyHead]


@dataclass(frozen=True)
class ValueHead:
    """Value: embedding (1x1 Conv for conv bodies, Dense per token for attention bodies) + act,
    flatten (NCHW for Conv, square-major for Dense), fc1 + act, fc2 -> 3 WDL logits (wdl) or 1 (tanh).
    """

    embedding: Union[Conv, Dense]
    fc1: Dense
    fc2: Dense
    wdl: bool
    activation: str


@dataclass(frozen=True)
class MovesLeftHead:
    """Moves-left: like the value head; output relu(fc2) = expected plies left."""

    embedding: Union[Conv, Dense]
    fc1: Dense
    fc2: Dense
    activation: str


@dataclass(frozen=True)
class NetDescription:
    """Everything needed to evaluate one Lc0 network (the heads already selected)."""

    input_format: int  # lc0 InputFormat enum value (1, 2, 3, 4, 5, 132, 133)
    network_format: int  # after fix-ups: 3, 4, 6 or 7
    policy_format: int  # 1 classical, 2 convolution, 3 attention
    value_format: int  # 1 classical (tanh), 2 WDL
    moves_left_format: int  # 0 none, 1 V1
    input_embedding: int  # 0 none, 1 PE_MAP, 2 PE_DENSE (as lc0 reports it)
    default_activation: str
    tower: Optional[ConvTower]
    body: Optional[AttentionBody]
    policy: PolicyHead
    value: ValueHead
    moves_left: Optional[MovesLeftHead]
    policy_head_name: str = "vanilla"
    value_head_name: str = "winner"
    available_policy_heads: tuple[str, ...] = ("vanilla",)
    available_value_heads: tuple[str, ...] = ("winner",)
    license: str = ""
    min_version: str = ""
    training_steps: int = 0
    metadata: dict = field(default_factory=dict, compare=False)

    @property
    def is_attention_body(self) -> bool:
        return self.body is not None

    @property
    def has_wdl(self) -> bool:
        return self.value.wdl

    @property
    def has_moves_left(self) -> bool:
        return self.moves_left is not None
