"""Reads an Lc0 weights file into a `NetDescription`, applying lc0's load-time rules.

Pipeline: bytes (gzip or plain protobuf, as lc0's gzread accepts both) -> `pblczero.Net` -> checks
(magic, min_version, weights encoding, ONNX/RPE rejection) -> lc0's `FixOlderWeightsFile` format
fix-ups -> supported-format check -> head selection (multi-head nets) -> float32 layers with batch
norm folded, activations and LayerNorm epsilons resolved -> frozen `NetDescription`.

Every problem with the file is a `NetFormatError` whose one-line message names the offending field.

A net is proved usable before it is accepted (a hostile or broken file fails with one line, never hangs):
- size caps before anything is decoded (net/netfile.py's `read_net_bytes`): the file, and the gzip
  stream read incrementally, may not exceed `MAX_NET_BYTES`, and past `RATIO_CHECK_FLOOR` the stream
  may not expand more than `MAX_COMPRESSION_RATIO` times, so a small gzip bomb is stopped after a few MB;
- each layer's byte length is checked against the shape the architecture implies before its values
  are converted to float32;
- every decoded tensor is finite, LINEAR16 `min_val <= max_val` are finite, each layer's encoding is
  one the codec reads (an unknown enum value, which protobuf files away as an unknown field, is an
  error rather than silently LINEAR16), batch-norm folding must not overflow float32;
- the last proof, finite outputs on the start position, needs a forward pass and so lives one layer
  up: `lc0_rocm.api.load_net` (numpy reference) and `api.open_backend` (the chosen backend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
from google.protobuf.message import DecodeError

from ..encoding.outputs import POLICY_SIZE
from ..encoding.packed import NUM_PLANES
from ..encoding.planes import INPUT_FORMATS
from ..errors import NetFormatError
from . import schema
from .codec import decode_layer, layer_encoding, layer_size
from .description import (
    FFN, AttentionBody, AttentionPolicyHead, ClassicalPolicyHead, Conv, ConvPolicyHead, ConvTower, Dense,
    EncoderLayer, LayerNorm, MovesLeftHead, MultiHeadAttention, NetDescription, ResidualBlock, SEUnit,
    Smolgen, ValueHead,
)
from .netfile import read_net_bytes

# The engine version this loader behaves like (it reads master's per-layer encodings).
ENGINE_VERSION = (0, 33, 0)
_ALWAYS_ACCEPTED_VERSION = 0x5C99973
BN_EPS = 1e-5

# NetworkFormat enum numbers
NETWORK_CLASSICAL, NETWORK_SE, NETWORK_CLASSICAL_WITH_HEADFORMAT, NETWORK_SE_WITH_HEADFORMAT = 1, 2, 3, 4
NETWORK_ONNX, NETWORK_AB, NETWORK_AB_MULTIHEAD, NETWORK_AB_LEGACY_MULTIHEAD = 5, 6, 7, 134
POLICY_CLASSICAL, POLICY_CONVOLUTION, POLICY_ATTENTION = 1, 2, 3
VALUE_CLASSICAL, VALUE_WDL = 1, 2
MOVES_LEFT_NONE, MOVES_LEFT_V1 = 0, 1
DEFAULT_ACTIVATION_RELU, DEFAULT_ACTIVATION_MISH = 0, 1
EMBEDDING_NONE, EMBEDDING_PE_MAP, EMBEDDING_PE_DENSE = 0, 1, 2
# what this loader reads, after the fix-ups (lc0's backends accept the same sets)
SUPPORTED_NETWORKS = (NETWORK_CLASSICAL_WITH_HEADFORMAT, NETWORK_SE_WITH_HEADFORMAT, NETWORK_AB, NETWORK_AB_MULTIHEAD)
ATTENTION_BODY_NETWORKS = (NETWORK_AB, NETWORK_AB_MULTIHEAD)

_ACTIVATIONS = {1: "mish", 2: "relu", 3: "none", 4: "tanh", 5: "sigmoid", 6: "selu", 7: "swish", 8: "relu2"}
POLICY_HEAD_KEYS = (("vanilla", "vanilla"), ("optimistic", "optimistic_st"), ("soft", "soft"),
                    ("opponent", "opponent"))
VALUE_HEAD_KEYS = ("winner", "q", "st")


def parse_net(data: bytes | bytearray, name: str = "weights") -> "schema.Net":
    """Parse protobuf bytes into a `pblczero.Net` (its magic number is checked by `net_from_proto`)."""
    net = schema.Net()
    try:
        net.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise NetFormatError(f"{name}: not an Lc0 network (protobuf decode failed: {e})") from None
    return net


def read_net(path) -> "schema.Net":
    """Read and parse a weights file (no fix-ups applied: the proto is exactly what the file holds)."""
    return parse_net(read_net_bytes(path), Path(path).name)


def load_net(path, policy_head: str = "vanilla", value_head: str = "winner") -> NetDescription:
    """Load a `.pb.gz` (or uncompressed protobuf) weights file into a `NetDescription`.

    Every check that needs no forward pass is done here; `lc0_rocm.api.load_net` adds the start
    position's finite outputs."""
    net = read_net(path)
    desc = net_from_proto(net, policy_head=policy_head, value_head=value_head)
    desc.metadata["path"] = str(path)
    return desc


# --------------------------------------------------------------------------- format fix-ups


def version_int(major: int, minor: int, patch: int) -> int:
    return major * 1_000_000 + minor * 1_000 + patch


def fixed_format(net) -> tuple["schema.NetworkFormat", list[str]]:
    """lc0's `src/neural/loader.cc: FixOlderWeightsFile` applied to a copy of the net's NetworkFormat (plus
    the attention-body fix-ups of `src/neural/network_legacy.cc: LegacyWeights`); returns it and notes."""
    nf = schema.NetworkFormat()
    nf.CopyFrom(net.format.network_format)
    notes: list[str] = []
    w = net.weights
    network = nf.network
    if not net.format.HasField("network_format"):
        nf.input, nf.output, nf.network = 1, 1, NETWORK_CLASSICAL_WITH_HEADFORMAT
        nf.value, nf.policy = VALUE_CLASSICAL, POLICY_CLASSICAL
        notes.append("no network_format: classical 112-plane input, classical policy and value")
    elif network == NETWORK_CLASSICAL:
        nf.network, nf.value, nf.policy = NETWORK_CLASSICAL_WITH_HEADFORMAT, VALUE_CLASSICAL, POLICY_CLASSICAL
        notes.append("NETWORK_CLASSICAL -> NETWORK_CLASSICAL_WITH_HEADFORMAT, classical heads")
    elif network == NETWORK_SE:
        nf.network, nf.value, nf.policy = NETWORK_SE_WITH_HEADFORMAT, VALUE_CLASSICAL, POLICY_CLASSICAL
        notes.append("NETWORK_SE -> NETWORK_SE_WITH_HEADFORMAT, classical heads")
    elif network == NETWORK_SE_WITH_HEADFORMAT and len(w.encoder) > 0:
        nf.network = NETWORK_AB
        notes.append("SE_WITH_HEADFORMAT with encoders -> ATTENTIONBODY_WITH_HEADFORMAT")
        if w.HasField("smolgen_w"):
            nf.ffn_activation = schema.enum_value("NetworkFormat.ActivationFunction", "ACTIVATION_RELU_2")
            nf.smolgen_activation = schema.enum_value("NetworkFormat.ActivationFunction", "ACTIVATION_SWISH")
            notes.append("legacy smolgen net: ffn activation relu2, smolgen activation swish")
    elif network == NETWORK_AB_LEGACY_MULTIHEAD:
        nf.network = NETWORK_AB_MULTIHEAD
        notes.append("AB_LEGACY_WITH_MULTIHEADFORMAT -> ATTENTIONBODY_WITH_MULTIHEADFORMAT")
    if nf.network == NETWORK_AB:
        if w.HasField("policy_heads") and w.HasField("value_heads"):
            nf.network, nf.input_embedding = NETWORK_AB_MULTIHEAD, EMBEDDING_PE_DENSE
            notes.append("multihead weights: ATTENTIONBODY_WITH_MULTIHEADFORMAT, PE_DENSE")
        if not nf.HasField("input_embedding"):
            nf.input_embedding = EMBEDDING_PE_MAP
            notes.append("input_embedding unset: PE_MAP")
    return nf, notes


def check_net(net) -> int:
    """The header checks of lc0's `src/neural/loader.cc: ParseWeightsProto` (magic, min_version, weights
    encoding) and the rejection of embedded ONNX models; returns the net's min_version as an int."""
    if net.magic != schema.MAGIC:
        raise NetFormatError(f"not an Lc0 network (bad magic 0x{net.magic:x}, expected 0x{schema.MAGIC:x})")
    mv = net.min_version
    net_ver = version_int(mv.major, mv.minor, mv.patch)
    if net_ver != _ALWAYS_ACCEPTED_VERSION and net_ver > version_int(*ENGINE_VERSION):
        raise NetFormatError(f"min_version: the net requires lc0 {mv.major}.{mv.minor}.{mv.patch} or newer "
                             f"(this loader reads {'.'.join(map(str, ENGINE_VERSION))})")
    if net.HasField("onnx_model") or net.format.network_format.network == NETWORK_ONNX:
        raise NetFormatError("format.network_format.network: NETWORK_ONNX (embedded ONNX model) is not supported")
    if not net.HasField("weights"):
        raise NetFormatError("weights: the net has no weights")
    if net.format.weights_encoding != 1 and net_ver < version_int(0, 33, 0):
        raise NetFormatError(
            f"format.weights_encoding: {schema.enum_name('Format.Encoding', net.format.weights_encoding)} "
            "is not supported (LINEAR16 required before min_version 0.33.0)")
    return net_ver


def _check_supported(nf) -> None:
    def bad(fieldname, enum, value):
        raise NetFormatError(f"format.network_format.{fieldname}: "
                             f"{schema.enum_name('NetworkFormat.' + enum, value)} is not supported")

    if nf.network not in SUPPORTED_NETWORKS:
        bad("network", "NetworkStructure", nf.network)
    if nf.policy not in (POLICY_CLASSICAL, POLICY_CONVOLUTION, POLICY_ATTENTION):
        bad("policy", "PolicyFormat", nf.policy)
    if nf.value not in (VALUE_CLASSICAL, VALUE_WDL):
        bad("value", "ValueFormat", nf.value)
    if nf.moves_left not in (MOVES_LEFT_NONE, MOVES_LEFT_V1):
        bad("moves_left", "MovesLeftFormat", nf.moves_left)
    if nf.default_activation not in (DEFAULT_ACTIVATION_RELU, DEFAULT_ACTIVATION_MISH):
        bad("default_activation", "DefaultActivation", nf.default_activation)
    if nf.input_embedding not in (EMBEDDING_NONE, EMBEDDING_PE_MAP, EMBEDDING_PE_DENSE):
        bad("input_embedding", "InputEmbeddingFormat", nf.input_embedding)
    if nf.input not in INPUT_FORMATS:
        bad("input", "InputFormat", nf.input)


def _activation(value: int, fieldname: str, default: str) -> str:
    if value == 0:
        return default
    if value not in _ACTIVATIONS:
        raise NetFormatError(f"format.network_format.{fieldname}: "
                             f"{schema.enum_name('NetworkFormat.ActivationFunction', value)} is not supported")
    return _ACTIVATIONS[value]


# --------------------------------------------------------------------------- layer builders


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float32)
    a.setflags(write=False)
    return a


class _Reader:
    """Decodes layers and builds description objects; `path` strings name fields in errors."""

    def __init__(self):
        self.encodings: set[int] = set()

    def count(self, msg, fname: str, path: str) -> int:
        """How many values the layer holds, without decoding it."""
        return layer_size(getattr(msg, fname), f"{path}.{fname}")

    def vec(self, msg, fname: str, path: str, size: Optional[int] = None, required: bool = True):
        layer = getattr(msg, fname)
        name = f"{path}.{fname}"
        if msg.HasField(fname):
            self.encodings.add(layer_encoding(layer, name))  # an unknown encoding value is an error
            n = layer_size(layer, name)  # checked before decoding: a wrong size costs nothing
            if size is not None and n and n != size:
                raise NetFormatError(f"{name}: expected {size} values, found {n}")
        v = decode_layer(layer, name)
        if v.size == 0:
            if required:
                raise NetFormatError(f"missing layer {name}")
            return None
        return v

    def dense(self, msg, wname: str, bname: Optional[str], path: str, n_in: Optional[int] = None,
              n_out: Optional[int] = None) -> Dense:
        b = self.vec(msg, bname, path, n_out) if bname else None
        if b is not None:
            n_out = b.size
        nw = self.count(msg, wname, path)
        if nw and n_in is not None and (nw % n_in or (n_out is not None and nw != n_in * n_out)):
            raise NetFormatError(f"{path}.{wname}: {nw} values do not make a [{n_out or '?'}, {n_in}] matrix")
        w = self.vec(msg, wname, path)
        if n_out is None:
            if n_in is None or w.size % n_in:
                raise NetFormatError(f"{path}.{wname}: {w.size} values do not fit input size {n_in}")
            n_out = w.size // n_in
        if w.size % n_out or (n_in is not None and w.size != n_in * n_out):
            raise NetFormatError(f"{path}.{wname}: {w.size} values do not make a [{n_out}, {n_in or '?'}] matrix")
        return Dense(w.reshape(n_out, w.size // n_out), b)

    def conv(self, block, path: str, n_in: int, k: int) -> Conv:
        """A ConvBlock with batch norm folded the way lc0 does (bn_stddivs holds the variance)."""
        biases = self.vec(block, "biases", path, required=False)
        means = self.vec(block, "bn_means", path, required=False)
        n_out = biases.size if biases is not None else means.size if means is not None else None
        nw = self.count(block, "weights", path)  # the kernel's size is checked before it is decoded
        if n_out is None:
            n_out = nw // (n_in * k * k)
        if nw and nw != n_out * n_in * k * k:
            raise NetFormatError(f"{path}.weights: {nw} values do not make a [{n_out}, {n_in}, {k}, {k}] kernel")
        w = self.vec(block, "weights", path).reshape(n_out, n_in, k, k)
        b = biases if biases is not None else np.zeros(n_out, np.float32)
        if means is not None:
            if means.size != n_out:
                raise NetFormatError(f"{path}.bn_means: expected {n_out} values, found {means.size}")
            var = self.vec(block, "bn_stddivs", path, n_out)
            gammas = self.vec(block, "bn_gammas", path, n_out, required=False)
            betas = self.vec(block, "bn_betas", path, n_out, required=False)
            with np.errstate(all="ignore"):
                if np.any(var + np.float32(BN_EPS) <= 0):
                    raise NetFormatError(f"{path}.bn_stddivs: negative variance")
                g = (np.ones(n_out, np.float32) if gammas is None else gammas) * (
                    np.float32(1.0) / np.sqrt(var + np.float32(BN_EPS)))
                if not np.all(np.isfinite(g)):
                    raise NetFormatError(f"{path}.bn_gammas: batch-norm scale gamma/sqrt(variance) overflows "
                                         "float32 when folded")
                beta = np.zeros(n_out, np.float32) if betas is None else betas
                w = w * g[:, None, None, None]
                b = beta - g * (means - b)
                if not np.all(np.isfinite(w)):
                    raise NetFormatError(f"{path}.bn_gammas: weights overflow float32 when batch norm is folded")
                if not np.all(np.isfinite(b)):
                    raise NetFormatError(f"{path}.bn_means: biases overflow float32 when batch norm is folded")
        return Conv(_ro(w), _ro(b))

    def layer_norm(self, msg, gname: str, bname: str, path: str, size: int, eps: float) -> LayerNorm:
        return LayerNorm(self.vec(msg, gname, path, size), self.vec(msg, bname, path, size), eps)

    def ffn(self, msg, path: str, e: int, activation: str) -> FFN:
        d1 = self.dense(msg, "dense1_w", "dense1_b", path, n_in=e)
        d2 = self.dense(msg, "dense2_w", "dense2_b", path, n_in=d1.n_out, n_out=e)
        return FFN(d1, d2, activation)

    def encoder(self, enc, path: str, e: int, heads: int, eps: float, ffn_act: str, smol_act: str,
                smolgen_g: Optional[int]) -> EncoderLayer:
        m = enc.mha
        mp = f"{path}.mha"
        for rpe in ("rpe_q", "rpe_k", "rpe_v"):
            if m.HasField(rpe):
                raise NetFormatError(f"{mp}.{rpe}: RPE weights are not supported")
        q = self.dense(m, "q_w", "q_b", mp, n_in=e)
        dm = q.n_out
        if heads <= 0 or dm % heads:
            raise NetFormatError(f"{path}: d_model {dm} is not divisible by the head count {heads}")
        k = self.dense(m, "k_w", "k_b", mp, n_in=e, n_out=dm)
        v = self.dense(m, "v_w", "v_b", mp, n_in=e, n_out=dm)
        out = self.dense(m, "dense_w", "dense_b", mp, n_in=dm, n_out=e)
        smol = None
        if m.HasField("smolgen"):
            if smolgen_g is None:
                raise NetFormatError(f"{mp}.smolgen: smolgen layer without the global weights.smolgen_w")
            s, sp = m.smolgen, f"{mp}.smolgen"
            comp = self.vec(s, "compress", sp)
            if comp.size % e:
                raise NetFormatError(f"{sp}.compress: {comp.size} values do not make a [hc, {e}] matrix")
            hc = comp.size // e
            d1 = self.dense(s, "dense1_w", "dense1_b", sp, n_in=64 * hc)
            d2 = self.dense(s, "dense2_w", "dense2_b", sp, n_in=d1.n_out)
            if d2.n_out != heads * smolgen_g:
                raise NetFormatError(f"{sp}.dense2_b: {d2.n_out} values, expected heads*g = {heads * smolgen_g}")
            smol = Smolgen(
                compress=Dense(comp.reshape(hc, e)),
                dense1=d1, ln1=self.layer_norm(s, "ln1_gammas", "ln1_betas", sp, d1.n_out, 1e-3),
                dense2=d2, ln2=self.layer_norm(s, "ln2_gammas", "ln2_betas", sp, d2.n_out, 1e-3),
                activation=smol_act)
        return EncoderLayer(
            mha=MultiHeadAttention(q=q, k=k, v=v, out=out, heads=heads, smolgen=smol),
            ln1=self.layer_norm(enc, "ln1_gammas", "ln1_betas", path, e, eps),
            ffn=self.ffn(enc.ffn, f"{path}.ffn", e, ffn_act),
            ln2=self.layer_norm(enc, "ln2_gammas", "ln2_betas", path, e, eps))


# --------------------------------------------------------------------------- the net


@dataclass
class _Heads:
    """The selected policy/value head messages and the names used in error messages."""

    policy: object
    policy_path: str
    policy_emb: tuple  # (message, path) holding ip_pol_w / ip_pol_b
    value: object
    value_path: str
    policy_names: tuple = ("vanilla",)
    value_names: tuple = ("winner",)
    notes: list = field(default_factory=list)


def _select_heads(w, policy_head: str, value_head: str) -> _Heads:
    """Which messages hold the selected policy and value heads (lc0's `src/neural/network_legacy.cc:
    MultiHeadWeights`)."""
    if w.HasField("policy_heads"):
        ph = w.policy_heads
        policies = {"vanilla": (ph.vanilla, "weights.policy_heads.vanilla")}
        for name, key in POLICY_HEAD_KEYS[1:]:
            if ph.HasField(key):
                policies[name] = (getattr(ph, key), f"weights.policy_heads.{key}")
        shared = (ph, "weights.policy_heads") if ph.HasField("ip_pol_w") else (w, "weights")
    else:
        if not (w.HasField("policy") or w.HasField("policy1") or w.HasField("ip_pol_w")):
            raise NetFormatError("weights: could not find valid policy head weights")
        policies = {"vanilla": (w, "weights")}
        shared = (w, "weights")
    if w.HasField("value_heads"):
        vh = w.value_heads
        values = {"winner": (vh.winner, "weights.value_heads.winner")}
        for name in VALUE_HEAD_KEYS[1:]:
            if vh.HasField(name):
                values[name] = (getattr(vh, name), f"weights.value_heads.{name}")
    else:
        if not (w.HasField("value") or w.HasField("ip_val_w")):
            raise NetFormatError("weights: could not find valid value head weights")
        values = {"winner": (w, "weights")}
    if policy_head not in policies:
        raise NetFormatError(f"policy head '{policy_head}' does not exist in this net "
                             f"(available: {', '.join(policies)})")
    if value_head not in values:
        raise NetFormatError(f"value head '{value_head}' does not exist in this net "
                             f"(available: {', '.join(values)})")
    pmsg, ppath = policies[policy_head]
    if pmsg is not w and pmsg.HasField("ip_pol_w"):
        emb = (pmsg, ppath)
    else:
        emb = shared
    vmsg, vpath = values[value_head]
    return _Heads(pmsg, ppath, emb, vmsg, vpath, tuple(policies), tuple(values))


@dataclass
class _Build:
    """What every step of `net_from_proto` reads and adds to: the weights, the fixed-up format, the
    default activation, the layer reader and the dimensions found so far (`describenet` shows them)."""

    w: object
    nf: object
    act: str
    rd: _Reader = field(default_factory=_Reader)
    dims: dict = field(default_factory=dict)


def net_from_proto(net, policy_head: str = "vanilla", value_head: str = "winner") -> NetDescription:
    """Build the `NetDescription` of a parsed `pblczero.Net` (the proto is not modified): header checks,
    format fix-ups, supported-format check, head selection, then the layers part by part."""
    check_net(net)
    nf, notes = fixed_format(net)
    _check_supported(nf)
    b = _Build(net.weights, nf, "mish" if nf.default_activation == DEFAULT_ACTIVATION_MISH else "relu")
    heads = _select_heads(net.weights, policy_head, value_head)
    tower = _read_tower(b)
    body = _read_body(b, tower)
    channels = body.embedding_size if body is not None else tower.filters
    policy = _read_policy_head(b, heads, body, tower, channels)
    value = _read_value_head(b, heads, body, channels)
    moves_left = _read_moves_left_head(b, body, channels)
    meta = {
        "file_network_format": net.format.network_format.network,
        "has_network_format": net.format.HasField("network_format"),
        "fixups": notes,
        "layer_encodings": sorted(b.rd.encodings),
        "dims": b.dims,
        "ffn_activation": b.dims.get("ffn_activation"),
        "smolgen_activation": b.dims.get("smolgen_activation"),
    }
    mv = net.min_version
    return NetDescription(
        input_format=nf.input, network_format=nf.network, policy_format=nf.policy, value_format=nf.value,
        moves_left_format=nf.moves_left, input_embedding=nf.input_embedding, default_activation=b.act,
        tower=tower, body=body, policy=policy, value=value, moves_left=moves_left,
        policy_head_name=policy_head, value_head_name=value_head,
        available_policy_heads=heads.policy_names, available_value_heads=heads.value_names,
        license=net.license, min_version=f"{mv.major}.{mv.minor}.{mv.patch}",
        training_steps=net.training_params.training_steps, metadata=meta)


def _read_tower(b: _Build) -> Optional[ConvTower]:
    """The residual tower of conv bodies (and of hybrid conv + attention bodies), or None."""
    w, rd, dims = b.w, b.rd, b.dims
    attention_body = b.nf.network in ATTENTION_BODY_NETWORKS
    if attention_body and len(w.residual) == 0:
        return None
    if not attention_body and len(w.residual) == 0:
        raise NetFormatError("weights.residual: conv-body net without residual blocks")
    inp = rd.conv(w.input, "weights.input", NUM_PLANES, 3)
    f = inp.n_out
    blocks = []
    for i, res in enumerate(w.residual):
        p = f"weights.residual[{i}]"
        c1 = rd.conv(res.conv1, f"{p}.conv1", f, 3)
        c2 = rd.conv(res.conv2, f"{p}.conv2", f, 3)
        if c1.n_out != f or c2.n_out != f:
            raise NetFormatError(f"{p}: residual convolutions must keep {f} channels")
        se = None
        if res.HasField("se"):
            fc1 = rd.dense(res.se, "w1", "b1", f"{p}.se", n_in=f)
            fc2 = rd.dense(res.se, "w2", "b2", f"{p}.se", n_in=fc1.n_out, n_out=2 * f)
            se = SEUnit(fc1, fc2)
            dims["se_channels"] = fc1.n_out
        blocks.append(ResidualBlock(c1, c2, se))
    dims.update(filters=f, blocks=len(blocks))
    return ConvTower(inp, tuple(blocks), b.act)


def _read_body(b: _Build, tower: Optional[ConvTower]) -> Optional[AttentionBody]:
    """The attention body: embedding (from the tower, PE_MAP or PE_DENSE), gating, encoder stack; or None."""
    w, nf, rd, dims = b.w, b.nf, b.rd, b.dims
    if nf.network not in ATTENTION_BODY_NETWORKS:
        return None
    ffn_act = _activation(nf.ffn_activation, "ffn_activation", b.act)
    smol_act = _activation(nf.smolgen_activation, "smolgen_activation", b.act)
    if len(w.encoder) == 0:
        raise NetFormatError("weights.encoder: attention-body net without encoder layers")
    pe_dense = nf.input_embedding == EMBEDDING_PE_DENSE
    preproc = None
    if tower is not None:
        embedding, c_in = "tower", tower.filters
    elif pe_dense:
        embedding = "pe_dense"
        pb = rd.vec(w, "ip_emb_preproc_b", "weights")
        if pb.size % 64:
            raise NetFormatError(f"weights.ip_emb_preproc_b: {pb.size} values is not 64*D")
        preproc = rd.dense(w, "ip_emb_preproc_w", "ip_emb_preproc_b", "weights", n_in=64 * 12)
        c_in = NUM_PLANES + pb.size // 64
        dims["preproc_d"] = pb.size // 64
    else:
        embedding, c_in = "pe_map", NUM_PLANES + 64
    emb = rd.dense(w, "ip_emb_w", "ip_emb_b", "weights", n_in=c_in)
    e = emb.n_out
    eps = 1e-3 if pe_dense else 1e-6
    emb_ln = emb_ffn = emb_ffn_ln = None
    if pe_dense:
        emb_ln = rd.layer_norm(w, "ip_emb_ln_gammas", "ip_emb_ln_betas", "weights", e, 1e-3)
        emb_ffn = rd.ffn(w.ip_emb_ffn, "weights.ip_emb_ffn", e, ffn_act)
        emb_ffn_ln = rd.layer_norm(w, "ip_emb_ffn_ln_gammas", "ip_emb_ffn_ln_betas", "weights", e, 1e-3)
        dims["emb_dff"] = emb_ffn.dense1.n_out
    gate_mult = gate_add = None
    gm = rd.vec(w, "ip_mult_gate", "weights", 64 * e, required=False)
    ga = rd.vec(w, "ip_add_gate", "weights", 64 * e, required=False)
    if gm is not None and ga is not None:  # lc0 applies gating only when both are present
        gate_mult, gate_add = _ro(gm.reshape(e, 64).T), _ro(ga.reshape(e, 64).T)
    smolgen_global, g = None, None
    if w.HasField("smolgen_w"):
        sw = rd.vec(w, "smolgen_w", "weights")
        if sw.size % 4096:
            raise NetFormatError(f"weights.smolgen_w: {sw.size} values do not make a [4096, g] matrix")
        g = sw.size // 4096
        smolgen_global = sw.reshape(4096, g)
    n_heads = w.headcount
    if n_heads <= 0:
        raise NetFormatError("weights.headcount: missing or zero")
    encoders = tuple(
        rd.encoder(enc, f"weights.encoder[{i}]", e, n_heads, eps, ffn_act, smol_act, g)
        for i, enc in enumerate(w.encoder))
    alpha = float(np.float32(math.pow(2.0 * len(encoders), -0.25)))
    l0 = encoders[0]
    dims.update(embedding_size=e, encoder_layers=len(encoders), heads=n_heads, d_model=l0.mha.d_model,
                dff=l0.ffn.dense1.n_out, ffn_activation=ffn_act, smolgen_activation=smol_act)
    if l0.mha.smolgen is not None:
        sm = l0.mha.smolgen
        dims.update(smolgen_hc=sm.compress.n_out, smolgen_hs=sm.dense1.n_out, smolgen_g=g)
    return AttentionBody(
        embedding=embedding, emb=emb, activation=b.act, encoders=encoders, alpha=alpha,
        preproc=preproc, emb_ln=emb_ln, gate_mult=gate_mult, gate_add=gate_add, emb_ffn=emb_ffn,
        emb_ffn_ln=emb_ffn_ln, smolgen_global=smolgen_global)


def _read_policy_head(b: _Build, heads: _Heads, body, tower, channels: int):
    """The selected policy head: attention (any body), convolution or classical (conv bodies only)."""
    nf, rd, dims = b.nf, b.rd, b.dims
    pm, pp = heads.policy, heads.policy_path
    if nf.policy == POLICY_ATTENTION:
        emsg, epath = heads.policy_emb
        pemb = rd.dense(emsg, "ip_pol_w", "ip_pol_b", epath, n_in=channels)
        pdim = pemb.n_out
        pol_heads = pm.pol_headcount
        pol_encoders = []
        for i, enc in enumerate(pm.pol_encoder):
            if enc.mha.HasField("smolgen") and body is None:
                raise NetFormatError(f"{pp}.pol_encoder[{i}].mha.smolgen: smolgen in the policy encoder "
                                     "of a conv-body net is not supported")
            pol_encoders.append(rd.encoder(
                enc, f"{pp}.pol_encoder[{i}]", pdim, pol_heads, 1e-6,
                dims["ffn_activation"] if body is not None else "selu",
                dims["smolgen_activation"] if body is not None else "none",
                dims.get("smolgen_g")))
        wq = rd.dense(pm, "ip2_pol_w", "ip2_pol_b", pp, n_in=pdim)
        wk = rd.dense(pm, "ip3_pol_w", "ip3_pol_b", pp, n_in=pdim, n_out=wq.n_out)
        ppo = rd.vec(pm, "ip4_pol_w", pp, 4 * wq.n_out).reshape(4, wq.n_out)
        dims.update(policy_embedding=pdim, policy_d_model=wq.n_out, policy_encoders=len(pol_encoders))
        if pol_encoders:
            dims["policy_encoder_heads"] = pol_heads
        return AttentionPolicyHead(pemb, b.act if body is not None else "selu", tuple(pol_encoders), wq, wk, ppo)
    if body is not None:
        raise NetFormatError(f"format.network_format.policy: "
                             f"{schema.enum_name('NetworkFormat.PolicyFormat', nf.policy)} "
                             "is not supported with an attention body")
    f = tower.filters
    if nf.policy == POLICY_CONVOLUTION:
        c1 = rd.conv(pm.policy1, f"{pp}.policy1", f, 3)
        c2 = rd.conv(pm.policy, f"{pp}.policy", c1.n_out, 3)
        if c2.n_out < 73:
            raise NetFormatError(f"{pp}.policy: {c2.n_out} output planes, at least 73 needed")
        return ConvPolicyHead(c1, c2, b.act)
    conv = rd.conv(pm.policy, f"{pp}.policy", f, 1)
    emsg, epath = heads.policy_emb
    fc = rd.dense(emsg, "ip_pol_w", "ip_pol_b", epath, n_in=64 * conv.n_out, n_out=POLICY_SIZE)
    dims["policy_channels"] = conv.n_out
    return ClassicalPolicyHead(conv, fc, b.act)


def _read_value_head(b: _Build, heads: _Heads, body, channels: int) -> ValueHead:
    """The selected value head (WDL or a single tanh value)."""
    rd = b.rd
    vm, vp = heads.value, heads.value_path
    wdl = b.nf.value == VALUE_WDL
    if body is not None:
        vemb = rd.dense(vm, "ip_val_w", "ip_val_b", vp, n_in=channels)
    else:
        vemb = rd.conv(vm.value, f"{vp}.value", channels, 1)
    vfc1 = rd.dense(vm, "ip1_val_w", "ip1_val_b", vp, n_in=64 * vemb.n_out)
    vfc2 = rd.dense(vm, "ip2_val_w", "ip2_val_b", vp, n_in=vfc1.n_out, n_out=3 if wdl else 1)
    b.dims.update(value_channels=vemb.n_out, value_hidden=vfc1.n_out)
    return ValueHead(vemb, vfc1, vfc2, wdl, b.act)


def _read_moves_left_head(b: _Build, body, channels: int) -> Optional[MovesLeftHead]:
    """The moves-left head (always at the top level of the weights), or None."""
    w, rd = b.w, b.rd
    if b.nf.moves_left != MOVES_LEFT_V1:
        return None
    if body is not None:
        memb = rd.dense(w, "ip_mov_w", "ip_mov_b", "weights", n_in=channels)
    else:
        memb = rd.conv(w.moves_left, "weights.moves_left", channels, 1)
    mfc1 = rd.dense(w, "ip1_mov_w", "ip1_mov_b", "weights", n_in=64 * memb.n_out)
    mfc2 = rd.dense(w, "ip2_mov_w", "ip2_mov_b", "weights", n_in=mfc1.n_out, n_out=1)
    b.dims.update(mlh_channels=memb.n_out, mlh_hidden=mfc1.n_out)
    return MovesLeftHead(memb, mfc1, mfc2, b.act)
