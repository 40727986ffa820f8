"""Human-readable architecture summary of a loaded network (what `lc0-rocm describenet` prints)."""

from __future__ import annotations

import dataclasses

import numpy as np

from . import schema
from .description import (
    AttentionPolicyHead, ClassicalPolicyHead, Conv, ConvPolicyHead, NetDescription,
)

_ENCODING_NAMES = {1: "LINEAR16", 2: "FLOAT16", 3: "BFLOAT16", 4: "FLOAT32"}


def count_params(obj) -> int:
    """Number of float values held by a description object (after batch-norm folding)."""
    if isinstance(obj, np.ndarray):
        return int(obj.size)
    if dataclasses.is_dataclass(obj):
        return sum(count_params(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name != "metadata")
    if isinstance(obj, (tuple, list)):
        return sum(count_params(x) for x in obj)
    return 0


def _fmt(enum: str, value: int) -> str:
    return f"{schema.enum_name('NetworkFormat.' + enum, value)} ({value})"


def describe(net: NetDescription) -> str:
    """Multi-line summary: formats, body dimensions, heads, activations, parameter counts."""
    dims = net.metadata.get("dims", {})
    lines: list[tuple[str, str]] = []

    def add(key, value):
        lines.append((key, str(value)))

    def section(title):
        lines.append((None, title))

    section("General")
    if net.metadata.get("path"):
        add("File", net.metadata["path"])
    add("Minimal Lc0 version", net.min_version)
    if net.license:
        add("License", net.license)
    add("Training steps", net.training_steps)
    encodings = [_ENCODING_NAMES.get(e, str(e)) for e in net.metadata.get("layer_encodings", [])]
    if encodings:
        add("Layer encodings", ", ".join(encodings))

    section("Format")
    add("Input", _fmt("InputFormat", net.input_format))
    add("Network", _fmt("NetworkStructure", net.network_format))
    file_network = net.metadata.get("file_network_format")
    if file_network is not None and file_network != net.network_format:
        add("Network in file", _fmt("NetworkStructure", file_network))
    add("Policy", _fmt("PolicyFormat", net.policy_format))
    add("Value", _fmt("ValueFormat", net.value_format))
    add("Moves left", _fmt("MovesLeftFormat", net.moves_left_format))
    if net.is_attention_body:
        add("Input embedding", _fmt("InputEmbeddingFormat", net.input_embedding))
    for note in net.metadata.get("fixups", []):
        add("Load-time fix-up", note)

    section("Body")
    add("Default activation", net.default_activation)
    if net.tower is not None:
        t = net.tower
        se = sum(1 for b in t.blocks if b.se is not None)
        add("Residual tower", f"{len(t.blocks)} blocks x {t.filters} filters"
            + (f", {se} with SE (hidden {dims.get('se_channels')})" if se else ", no SE"))
    if net.body is not None:
        b = net.body
        l0 = b.encoders[0]
        add("Embedding", {"pe_map": "PE_MAP (64-channel position table)",
                          "pe_dense": f"PE_DENSE (dense positional preprocessing, {dims.get('preproc_d')} per square)",
                          "tower": "residual tower output"}[b.embedding])
        add("Embedding size", b.embedding_size)
        add("Encoder layers", len(b.encoders))
        add("Heads", f"{l0.mha.heads} (d_model {l0.mha.d_model}, depth {l0.mha.depth})")
        add("Encoder FFN", f"{l0.ffn.dense1.n_out} ({l0.ffn.activation})")
        if b.emb_ffn is not None:
            add("Embedding FFN", f"{b.emb_ffn.dense1.n_out} ({b.emb_ffn.activation})")
        add("Input gating", "yes" if b.gate_mult is not None else "no")
        if l0.mha.smolgen is not None:
            s = l0.mha.smolgen
            add("Smolgen", f"compress {s.compress.n_out}, hidden {s.dense1.n_out}, "
                f"gen/head {b.smolgen_global.shape[1]} ({s.activation})")
        else:
            add("Smolgen", "no")
        add("Alpha", f"{b.alpha:.6f}")
        add("LayerNorm eps", f"{l0.ln1.eps:g}")

    section("Heads")
    p = net.policy
    if isinstance(p, AttentionPolicyHead):
        desc = (f"attention, embedding {p.embedding.n_out} ({p.embedding_activation}), d_model {p.wq.n_out}")
        if p.encoders:
            e = p.encoders[0]
            desc += (f", {len(p.encoders)} policy encoder(s) with {e.mha.heads} heads, "
                     f"FFN {e.ffn.dense1.n_out} ({e.ffn.activation})")
    elif isinstance(p, ConvPolicyHead):
        desc = f"convolution, {p.conv1.n_out} filters -> {p.conv2.n_out} planes"
    elif isinstance(p, ClassicalPolicyHead):
        desc = f"classical, 1x1 conv to {p.conv.n_out} channels -> FC {p.fc.n_out}"
    else:
        desc = type(p).__name__
    add("Policy", desc)
    add("Policy heads", ", ".join(f"[{h}]" if h == net.policy_head_name else h for h in net.available_policy_heads))
    v = net.value
    kind = "conv 1x1" if isinstance(v.embedding, Conv) else "dense"
    add("Value", f"{'WDL' if v.wdl else 'classical (tanh)'}, {kind} to {v.embedding.n_out} channels, "
        f"FC {v.fc1.n_out} -> {v.fc2.n_out}")
    add("Value heads", ", ".join(f"[{h}]" if h == net.value_head_name else h for h in net.available_value_heads))
    if net.moves_left is not None:
        m = net.moves_left
        kind = "conv 1x1" if isinstance(m.embedding, Conv) else "dense"
        add("Moves left", f"{kind} to {m.embedding.n_out} channels, FC {m.fc1.n_out} -> 1")
    else:
        add("Moves left", "none")

    section("Parameters")
    parts = [("residual tower", net.tower), ("attention body", net.body), ("policy head", net.policy),
             ("value head", net.value), ("moves-left head", net.moves_left)]
    for name, part in parts:
        if part is not None:
            add(name.capitalize(), f"{count_params(part):,}")
    add("Total", f"{count_params(net):,}")

    width = max(len(k) for k, _ in lines if k is not None)
    out = []
    for key, value in lines:
        if key is None:
            out.extend(([""] if out else []) + [value, "~" * len(value)])
        else:
            out.append(f"{key:>{width}}: {value}")
    return "\n".join(out)
