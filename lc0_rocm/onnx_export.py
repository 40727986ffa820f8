"""ONNX export of a network description (opset 17, float32), the same math as `reference`.

Graph interface (the names lc0's own `leela2onnx` uses, so lc0's onnx backends can read it):
input `/input/planes` float32 [N, 112, 8, 8] (dense planes, H = rank, W = file); outputs
`/output/policy` [N, 1858] raw logits, `/output/wdl` [N, 3] probabilities (WDL nets) or
`/output/value` [N, 1] tanh value (classical nets), and `/output/mlh` [N, 1] (nets with a
moves-left head). The conv tower runs NCHW (ONNX Conv); attention parts run on [N, 64, C] tokens.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from .encoding.outputs import POLICY_SIZE
from .encoding.packed import NUM_PLANES
from .net.description import (
    AttentionBody,
    AttentionPolicyHead,
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    ConvTower,
    Dense,
    EncoderLayer,
    LayerNorm,
    MovesLeftHead,
    NetDescription,
    ValueHead,
)

OPSET = 17
IR_VERSION = 8
INPUT_NAME = "/input/planes"
OUTPUT_POLICY = "/output/policy"
OUTPUT_WDL = "/output/wdl"
OUTPUT_VALUE = "/output/value"
OUTPUT_MLH = "/output/mlh"


class _Graph:
    """Accumulates nodes and initializers; every helper returns the name of its output tensor."""

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes = []
        self.initializers = []
        self._count = 0

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value, hint: str = "const", dtype=np.float32) -> str:
        name = self._name(hint)
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value, dtype=dtype), name))
        return name

    def ints(self, values, hint: str = "shape") -> str:
        return self.const(np.asarray(values, dtype=np.int64), hint, np.int64)

    def op(self, op_type: str, inputs: list[str], hint: Optional[str] = None, **attrs) -> str:
        out = self._name(hint or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def output(self, src: str, name: str) -> None:
        self.nodes.append(self.helper.make_node("Identity", [src], [name], name=name))

    # ---------------------------------------------------------------------------------------
    # building blocks

    def act(self, x: str, name: str) -> str:
        if name == "none":
            return x
        if name == "relu":
            return self.op("Relu", [x])
        if name == "relu2":
            r = self.op("Relu", [x])
            return self.op("Mul", [r, r], "relu2")
        if name == "mish":
            t = self.op("Tanh", [self.op("Softplus", [x])])
            return self.op("Mul", [x, t], "mish")
        if name == "swish":
            return self.op("Mul", [x, self.op("Sigmoid", [x])], "swish")
        if name == "selu":
            return self.op("Selu", [x], alpha=1.67326324, gamma=1.05070098)
        if name == "tanh":
            return self.op("Tanh", [x])
        if name == "sigmoid":
            return self.op("Sigmoid", [x])
        raise ValueError(f"unknown activation {name!r}")

    def dense(self, x: str, layer: Dense, act: str = "none", hint: str = "dense") -> str:
        """x [..., in] → act(x Wᵀ + b) [..., out] (MatMul broadcasts over leading axes)."""
        y = self.op("MatMul", [x, self.const(layer.w.T, hint + "_w")], hint)
        if layer.b is not None:
            y = self.op("Add", [y, self.const(layer.b, hint + "_b")], hint + "_add")
        return self.act(y, act)

    def conv(self, x: str, layer: Conv, act: str = "none") -> str:
        pad = layer.kernel // 2
        y = self.op(
            "Conv",
            [x, self.const(layer.w, "conv_w"), self.const(layer.b, "conv_b")],
            kernel_shape=[layer.kernel, layer.kernel],
            pads=[pad] * 4,
        )
        return self.act(y, act)

    def layer_norm(self, x: str, ln: LayerNorm) -> str:
        return self.op(
            "LayerNormalization", [x, self.const(ln.gamma, "ln_g"), self.const(ln.beta, "ln_b")], axis=-1, epsilon=float(ln.eps)
        )

    def reshape(self, x: str, shape) -> str:
        return self.op("Reshape", [x, self.ints(shape)])

    def transpose(self, x: str, perm) -> str:
        return self.op("Transpose", [x], perm=list(perm))

    def slice(self, x: str, starts, ends, axes) -> str:
        return self.op("Slice", [x, self.ints(starts), self.ints(ends), self.ints(axes)])

    def scale(self, x: str, factor: float) -> str:
        return self.op("Mul", [x, self.const(np.float32(factor), "scale")])

    def nchw_to_tokens(self, x: str, channels: int) -> str:
        """[N, C, 8, 8] → [N, 64, C] square-major."""
        return self.reshape(self.transpose(x, (0, 2, 3, 1)), [-1, 64, channels])

    # ---------------------------------------------------------------------------------------
    # network parts

    def conv_tower(self, x: str, tower: ConvTower) -> str:
        act = tower.activation
        x = self.conv(x, tower.input, act)
        for block in tower.blocks:
            y = self.conv(x, block.conv1, act)
            z = self.conv(y, block.conv2)
            if block.se is not None:
                f = block.conv2.n_out
                s = self.op("ReduceMean", [z], axes=[2, 3], keepdims=0)  # [N, F]
                h = self.dense(s, block.se.fc1, act, "se_fc1")
                t = self.dense(h, block.se.fc2, "none", "se_fc2")  # [N, 2F]
                gamma = self.op("Sigmoid", [self.slice(t, [0], [f], [1])])
                beta = self.slice(t, [f], [2 * f], [1])
                gamma = self.reshape(gamma, [-1, f, 1, 1])
                beta = self.reshape(beta, [-1, f, 1, 1])
                z = self.op("Add", [self.op("Mul", [z, gamma]), beta])
            x = self.act(self.op("Add", [z, x], "residual"), act)
        return x

    def encoder_layer(self, x: str, layer: EncoderLayer, alpha: float, global_w: Optional[np.ndarray]) -> str:
        mha = layer.mha
        h, depth = mha.heads, mha.depth

        def heads(t: str, perm) -> str:
            return self.transpose(self.reshape(t, [-1, 64, h, depth]), perm)

        q = heads(self.dense(x, mha.q, hint="q"), (0, 2, 1, 3))  # [N, H, 64, depth]
        k = heads(self.dense(x, mha.k, hint="k"), (0, 2, 3, 1))  # [N, H, depth, 64]
        v = heads(self.dense(x, mha.v, hint="v"), (0, 2, 1, 3))
        logits = self.scale(self.op("MatMul", [q, k], "qk"), 1.0 / math.sqrt(depth))
        if mha.smolgen is not None:
            sg = mha.smolgen
            c = self.reshape(self.dense(x, sg.compress, hint="smol_compress"), [-1, 64 * sg.compress.n_out])
            u = self.layer_norm(self.dense(c, sg.dense1, sg.activation, "smol_dense1"), sg.ln1)
            w = self.layer_norm(self.dense(u, sg.dense2, sg.activation, "smol_dense2"), sg.ln2)
            w = self.reshape(w, [-1, h, sg.dense2.n_out // h])
            bias = self.op("MatMul", [w, self.const(global_w.T, "smol_global")], "smol_bias")
            logits = self.op("Add", [logits, self.reshape(bias, [-1, h, 64, 64])])
        probs = self.op("Softmax", [logits], axis=-1)
        o = self.op("MatMul", [probs, v], "attn")
        o = self.reshape(self.transpose(o, (0, 2, 1, 3)), [-1, 64, h * depth])
        o = self.dense(o, mha.out, hint="attn_out")
        x1 = self.layer_norm(self.op("Add", [x, self.scale(o, alpha)]), layer.ln1)
        f = self.dense(x1, layer.ffn.dense1, layer.ffn.activation, "ffn1")
        f = self.dense(f, layer.ffn.dense2, hint="ffn2")
        return self.layer_norm(self.op("Add", [x1, self.scale(f, alpha)]), layer.ln2)

    def attention_body(self, planes: str, body: AttentionBody, tower_out: Optional[str]) -> str:
        e = body.emb
        if body.embedding == "tower":
            if tower_out is None:
                raise ValueError("attention body with embedding 'tower' but the net has no conv tower")
            t = self.dense(self.nchw_to_tokens(tower_out, e.n_in), e, body.activation, "emb")
        else:
            tokens = self.nchw_to_tokens(planes, NUM_PLANES)  # [N, 64, 112]
            if body.embedding == "pe_map":
                # [planes ++ table] Wᵀ = planes W[:, :112]ᵀ + (table W[:, 112:]ᵀ + b): the table part is constant
                from .encoding.pos_encoding import pos_encoding_table

                const = pos_encoding_table().astype(np.float64) @ e.w[:, NUM_PLANES:].T.astype(np.float64)
                if e.b is not None:
                    const = const + e.b
                y = self.op("MatMul", [tokens, self.const(e.w[:, :NUM_PLANES].T, "emb_w")], "emb")
                t = self.act(self.op("Add", [y, self.const(const, "emb_pos")]), body.activation)
            elif body.embedding == "pe_dense":
                vec = self.reshape(self.slice(tokens, [0], [12], [2]), [-1, 64 * 12])
                pos = self.reshape(self.dense(vec, body.preproc, hint="preproc"), [-1, 64, body.preproc.n_out // 64])
                t = self.dense(self.op("Concat", [tokens, pos], axis=2), e, body.activation, "emb")
            else:
                raise ValueError(f"unknown attention-body embedding {body.embedding!r}")
        if body.emb_ln is not None:
            t = self.layer_norm(t, body.emb_ln)
        if body.gate_mult is not None and body.gate_add is not None:
            t = self.op("Mul", [t, self.const(body.gate_mult, "gate_mult")])
            t = self.op("Add", [t, self.const(body.gate_add, "gate_add")])
        if body.emb_ffn is not None:
            hdn = self.dense(t, body.emb_ffn.dense1, body.emb_ffn.activation, "emb_ffn1")
            hdn = self.dense(hdn, body.emb_ffn.dense2, hint="emb_ffn2")
            t = self.layer_norm(self.op("Add", [t, self.scale(hdn, body.alpha)]), body.emb_ffn_ln)
        for layer in body.encoders:
            t = self.encoder_layer(t, layer, body.alpha, body.smolgen_global)
        return t

    def attention_policy(self, tokens: str, head: AttentionPolicyHead) -> str:
        from .encoding.policy_map import ATTENTION_POLICY_GATHER

        p = self.dense(tokens, head.embedding, head.embedding_activation, "pol_emb")
        for layer in head.encoders:
            p = self.encoder_layer(p, layer, 1.0, None)
        qp = self.dense(p, head.wq, hint="pol_q")
        kp = self.dense(p, head.wk, hint="pol_k")
        logits = self.op("MatMul", [qp, self.transpose(kp, (0, 2, 1))], "pol_qk")
        logits = self.scale(logits, 1.0 / math.sqrt(head.wq.n_out))  # [N, from, to]
        offs = self.op("MatMul", [self.slice(kp, [56], [64], [1]), self.const(head.ppo.T, "ppo")])  # [N, 8, 4]
        offs = self.op("Add", [self.slice(offs, [0], [3], [2]), self.slice(offs, [3], [4], [2])])  # [N, 8, 3]
        base = self.slice(logits, [48, 56], [56, 64], [1, 2])  # [N, from-file, to-file]
        promo = self.op(
            "Add",
            [self.op("Unsqueeze", [base, self.ints([3])]), self.op("Unsqueeze", [offs, self.ints([1])])],
            "promo",
        )  # [N, 8, 8, 3]
        flat = self.op("Concat", [self.reshape(logits, [-1, 4096]), self.reshape(promo, [-1, 192])], axis=1)
        return self.op("Gather", [flat, self.ints(ATTENTION_POLICY_GATHER, "policy_map")], "policy", axis=1)

    def conv_policy(self, x: str, head: ConvPolicyHead) -> str:
        from .encoding.policy_map import CONV_POLICY_GATHER

        y = self.conv(x, head.conv1, head.activation)
        z = self.reshape(self.conv(y, head.conv2), [-1, 64 * head.conv2.n_out])  # plane·64 + square
        return self.op("Gather", [z, self.ints(CONV_POLICY_GATHER, "policy_map")], "policy", axis=1)

    def classical_policy(self, x: str, head: ClassicalPolicyHead) -> str:
        y = self.conv(x, head.conv, head.activation)
        return self.dense(self.reshape(y, [-1, 64 * head.conv.n_out]), head.fc, hint="policy_fc")

    def head_embedding(self, x: str, embedding, act: str, attention: bool) -> str:
        if attention:  # tokens [N, 64, C]: dense per token, flattened square-major
            return self.reshape(self.dense(x, embedding, act, "head_emb"), [-1, 64 * embedding.n_out])
        if isinstance(embedding, Conv):  # NCHW conv, flattened channel-major
            return self.reshape(self.conv(x, embedding, act), [-1, 64 * embedding.n_out])
        raise ValueError("a conv-body head needs a 1x1 convolution embedding")

    def value_head(self, x: str, head: ValueHead, attention: bool) -> tuple[str, bool]:
        v = self.head_embedding(x, head.embedding, head.activation, attention)
        h = self.dense(v, head.fc1, head.activation, "val_fc1")
        out = self.dense(h, head.fc2, hint="val_fc2")
        if head.wdl:
            return self.op("Softmax", [out], axis=-1), True
        return self.op("Tanh", [out]), False

    def moves_left_head(self, x: str, head: MovesLeftHead, attention: bool) -> str:
        m = self.head_embedding(x, head.embedding, head.activation, attention)
        h = self.dense(m, head.fc1, head.activation, "mlh_fc1")
        return self.op("Relu", [self.dense(h, head.fc2, hint="mlh_fc2")])


def build_model(net: NetDescription):
    """The onnx.ModelProto of `net` (checked with onnx.checker)."""
    import onnx
    from onnx import TensorProto, helper

    g = _Graph()
    planes = INPUT_NAME
    tower_out = g.conv_tower(planes, net.tower) if net.tower is not None else None
    if net.body is not None:
        feats, attention = g.attention_body(planes, net.body, tower_out), True
    elif tower_out is not None:
        feats, attention = tower_out, False
    else:
        raise ValueError("net has neither a conv tower nor an attention body")

    head = net.policy
    if isinstance(head, AttentionPolicyHead):
        policy = g.attention_policy(feats if attention else g.nchw_to_tokens(feats, net.tower.filters), head)
    elif isinstance(head, ConvPolicyHead) and not attention:
        policy = g.conv_policy(feats, head)
    elif isinstance(head, ClassicalPolicyHead) and not attention:
        policy = g.classical_policy(feats, head)
    else:
        raise ValueError(f"{type(head).__name__} on an attention body is not supported")
    g.output(policy, OUTPUT_POLICY)
    outputs = [helper.make_tensor_value_info(OUTPUT_POLICY, TensorProto.FLOAT, ["batch", POLICY_SIZE])]

    value, is_wdl = g.value_head(feats, net.value, attention)
    if is_wdl:
        g.output(value, OUTPUT_WDL)
        outputs.append(helper.make_tensor_value_info(OUTPUT_WDL, TensorProto.FLOAT, ["batch", 3]))
    else:
        g.output(value, OUTPUT_VALUE)
        outputs.append(helper.make_tensor_value_info(OUTPUT_VALUE, TensorProto.FLOAT, ["batch", 1]))
    if net.moves_left is not None:
        g.output(g.moves_left_head(feats, net.moves_left, attention), OUTPUT_MLH)
        outputs.append(helper.make_tensor_value_info(OUTPUT_MLH, TensorProto.FLOAT, ["batch", 1]))

    inputs = [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", NUM_PLANES, 8, 8])]
    graph = helper.make_graph(g.nodes, "lc0_rocm", inputs, outputs, initializer=g.initializers)
    model = helper.make_model(
        graph,
        producer_name="lc0-rocm",
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
    )
    model.doc_string = (
        f"Lc0 network exported by lc0-rocm: policy head {net.policy_head_name!r}, value head {net.value_head_name!r}"
    )
    onnx.checker.check_model(model, full_check=False)
    return model


def export_onnx(net: NetDescription, path) -> Path:
    """Write `net` as an ONNX file (external data is not used: protobuf's 2 GiB limit applies)."""
    import onnx

    model = build_model(net)
    path = Path(path)
    onnx.save_model(model, str(path))
    return path
