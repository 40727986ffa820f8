"""The `pblczero` protobuf schema of Lc0 weight files, built at import time without protoc.

The message tree (field numbers, types, enums) is the one of lc0's `net.proto` as of master, which
is a superset of the v0.32.1 schema (master adds `Weights.Layer.encoding` and `Weights.Layer.dims`).
The schema is declared below as plain tables and turned into a `FileDescriptorProto`, then into
message classes with `message_factory.GetMessageClass`.

Public names: `Net`, `Weights`, `Layer`, `NetworkFormat`, `Format`, `EngineVersion`, `OnnxModel`,
`TrainingParams` (message classes) and the enum helpers `enum_value(enum, name)` / `enum_name(...)`.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "pblczero"
MAGIC = 0x1C0

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "fixed32": _F.TYPE_FIXED32,
    "uint32": _F.TYPE_UINT32,
    "float": _F.TYPE_FLOAT,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# ----- enums: (owner message path or "" for top level, enum name) -> [(value name, number)]
_ENUMS = {
    ("Weights.Layer", "Encoding"): [
        ("UNKNOWN_ENCODING", 0), ("LINEAR16", 1), ("FLOAT16", 2), ("BFLOAT16", 3), ("FLOAT32", 4),
    ],
    ("NetworkFormat", "InputFormat"): [
        ("INPUT_UNKNOWN", 0),
        ("INPUT_CLASSICAL_112_PLANE", 1),
        ("INPUT_112_WITH_CASTLING_PLANE", 2),
        ("INPUT_112_WITH_CANONICALIZATION", 3),
        ("INPUT_112_WITH_CANONICALIZATION_HECTOPLIES", 4),
        ("INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON", 132),
        ("INPUT_112_WITH_CANONICALIZATION_V2", 5),
        ("INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON", 133),
    ],
    ("NetworkFormat", "OutputFormat"): [("OUTPUT_UNKNOWN", 0), ("OUTPUT_CLASSICAL", 1), ("OUTPUT_WDL", 2)],
    ("NetworkFormat", "NetworkStructure"): [
        ("NETWORK_UNKNOWN", 0),
        ("NETWORK_CLASSICAL", 1),
        ("NETWORK_SE", 2),
        ("NETWORK_CLASSICAL_WITH_HEADFORMAT", 3),
        ("NETWORK_SE_WITH_HEADFORMAT", 4),
        ("NETWORK_ONNX", 5),
        ("NETWORK_ATTENTIONBODY_WITH_HEADFORMAT", 6),
        ("NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT", 7),
        ("NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT", 134),
    ],
    ("NetworkFormat", "PolicyFormat"): [
        ("POLICY_UNKNOWN", 0), ("POLICY_CLASSICAL", 1), ("POLICY_CONVOLUTION", 2), ("POLICY_ATTENTION", 3),
    ],
    ("NetworkFormat", "ValueFormat"): [
        ("VALUE_UNKNOWN", 0), ("VALUE_CLASSICAL", 1), ("VALUE_WDL", 2), ("VALUE_PARAM", 3),
    ],
    ("NetworkFormat", "MovesLeftFormat"): [("MOVES_LEFT_NONE", 0), ("MOVES_LEFT_V1", 1)],
    ("NetworkFormat", "ActivationFunction"): [
        ("ACTIVATION_DEFAULT", 0), ("ACTIVATION_MISH", 1), ("ACTIVATION_RELU", 2), ("ACTIVATION_NONE", 3),
        ("ACTIVATION_TANH", 4), ("ACTIVATION_SIGMOID", 5), ("ACTIVATION_SELU", 6), ("ACTIVATION_SWISH", 7),
        ("ACTIVATION_RELU_2", 8), ("ACTIVATION_SOFTMAX", 9),
    ],
    ("NetworkFormat", "DefaultActivation"): [("DEFAULT_ACTIVATION_RELU", 0), ("DEFAULT_ACTIVATION_MISH", 1)],
    ("NetworkFormat", "InputEmbeddingFormat"): [
        ("INPUT_EMBEDDING_NONE", 0), ("INPUT_EMBEDDING_PE_MAP", 1), ("INPUT_EMBEDDING_PE_DENSE", 2),
    ],
    ("Format", "Encoding"): [("UNKNOWN", 0), ("LINEAR16", 1)],
    ("OnnxModel", "DataType"): [
        ("UNKNOWN_DATATYPE", 0), ("FLOAT", 1), ("FLOAT16", 10), ("BFLOAT16", 16),
    ],
}

# ----- messages, parents before children: path -> [(field, number, type, label)]
# type: a scalar name, "msg:<path>" or "enum:<path>"; label: "opt" or "rep".
L = "msg:Weights.Layer"
_MESSAGES = {
    "EngineVersion": [("major", 1, "uint32", "opt"), ("minor", 2, "uint32", "opt"), ("patch", 3, "uint32", "opt")],
    "Weights": [],  # filled below (needs nested types first)
    "Weights.Layer": [
        ("min_val", 1, "float", "opt"),
        ("max_val", 2, "float", "opt"),
        ("params", 3, "bytes", "opt"),
        ("encoding", 4, "enum:Weights.Layer.Encoding", "opt"),
        ("dims", 5, "uint32", "rep"),
    ],
    "Weights.ConvBlock": [
        (n, i, L, "opt")
        for i, n in enumerate(["weights", "biases", "bn_means", "bn_stddivs", "bn_gammas", "bn_betas"], 1)
    ],
    "Weights.SEunit": [(n, i, L, "opt") for i, n in enumerate(["w1", "b1", "w2", "b2"], 1)],
    "Weights.Residual": [
        ("conv1", 1, "msg:Weights.ConvBlock", "opt"),
        ("conv2", 2, "msg:Weights.ConvBlock", "opt"),
        ("se", 3, "msg:Weights.SEunit", "opt"),
    ],
    "Weights.Smolgen": [
        (n, i, L, "opt")
        for i, n in enumerate(
            ["compress", "dense1_w", "dense1_b", "ln1_gammas", "ln1_betas",
             "dense2_w", "dense2_b", "ln2_gammas", "ln2_betas"], 1)
    ],
    "Weights.MHA": [
        (n, i, L, "opt")
        for i, n in enumerate(["q_w", "q_b", "k_w", "k_b", "v_w", "v_b", "dense_w", "dense_b"], 1)
    ] + [
        ("smolgen", 9, "msg:Weights.Smolgen", "opt"),
        ("rpe_q", 10, L, "opt"),
        ("rpe_k", 11, L, "opt"),
        ("rpe_v", 12, L, "opt"),
    ],
    "Weights.FFN": [(n, i, L, "opt") for i, n in enumerate(["dense1_w", "dense1_b", "dense2_w", "dense2_b"], 1)],
    "Weights.EncoderLayer": [
        ("mha", 1, "msg:Weights.MHA", "opt"),
        ("ln1_gammas", 2, L, "opt"),
        ("ln1_betas", 3, L, "opt"),
        ("ffn", 4, "msg:Weights.FFN", "opt"),
        ("ln2_gammas", 5, L, "opt"),
        ("ln2_betas", 6, L, "opt"),
    ],
    "Weights.PolicyHead": [
        ("ip_pol_w", 1, L, "opt"), ("ip_pol_b", 2, L, "opt"),
        ("ip2_pol_w", 3, L, "opt"), ("ip2_pol_b", 4, L, "opt"),
        ("ip3_pol_w", 5, L, "opt"), ("ip3_pol_b", 6, L, "opt"),
        ("ip4_pol_w", 7, L, "opt"),
        ("pol_encoder", 8, "msg:Weights.EncoderLayer", "rep"),
        ("pol_headcount", 9, "uint32", "opt"),
        ("policy1", 10, "msg:Weights.ConvBlock", "opt"),
        ("policy", 11, "msg:Weights.ConvBlock", "opt"),
    ],
    "Weights.ValueHead": [
        ("ip_val_w", 1, L, "opt"), ("ip_val_b", 2, L, "opt"),
        ("ip1_val_w", 3, L, "opt"), ("ip1_val_b", 4, L, "opt"),
        ("ip2_val_w", 5, L, "opt"), ("ip2_val_b", 6, L, "opt"),
        ("ip_val_err_w", 7, L, "opt"), ("ip_val_err_b", 8, L, "opt"),
        ("ip_val_cat_w", 9, L, "opt"), ("ip_val_cat_b", 10, L, "opt"),
        ("value", 11, "msg:Weights.ConvBlock", "opt"),
    ],
    "Weights.PolicyHeadMap": [("key", 1, "string", "opt"), ("value", 2, "msg:Weights.PolicyHead", "opt")],
    "Weights.ValueHeadMap": [("key", 1, "string", "opt"), ("value", 2, "msg:Weights.ValueHead", "opt")],
    "Weights.PolicyHeads": [
        ("ip_pol_w", 1, L, "opt"), ("ip_pol_b", 2, L, "opt"),
        ("vanilla", 3, "msg:Weights.PolicyHead", "opt"),
        ("optimistic_st", 4, "msg:Weights.PolicyHead", "opt"),
        ("soft", 5, "msg:Weights.PolicyHead", "opt"),
        ("opponent", 6, "msg:Weights.PolicyHead", "opt"),
        ("policy_head_map", 7, "msg:Weights.PolicyHeadMap", "rep"),
    ],
    "Weights.ValueHeads": [
        ("winner", 1, "msg:Weights.ValueHead", "opt"),
        ("q", 2, "msg:Weights.ValueHead", "opt"),
        ("st", 3, "msg:Weights.ValueHead", "opt"),
        ("value_head_map", 4, "msg:Weights.ValueHeadMap", "rep"),
    ],
    "TrainingParams": [
        ("training_steps", 1, "uint32", "opt"),
        ("learning_rate", 2, "float", "opt"),
        ("mse_loss", 3, "float", "opt"),
        ("policy_loss", 4, "float", "opt"),
        ("accuracy", 5, "float", "opt"),
        ("lc0_params", 6, "string", "opt"),
    ],
    "NetworkFormat": [
        ("input", 1, "enum:NetworkFormat.InputFormat", "opt"),
        ("output", 2, "enum:NetworkFormat.OutputFormat", "opt"),
        ("network", 3, "enum:NetworkFormat.NetworkStructure", "opt"),
        ("policy", 4, "enum:NetworkFormat.PolicyFormat", "opt"),
        ("value", 5, "enum:NetworkFormat.ValueFormat", "opt"),
        ("moves_left", 6, "enum:NetworkFormat.MovesLeftFormat", "opt"),
        ("default_activation", 7, "enum:NetworkFormat.DefaultActivation", "opt"),
        ("smolgen_activation", 8, "enum:NetworkFormat.ActivationFunction", "opt"),
        ("ffn_activation", 9, "enum:NetworkFormat.ActivationFunction", "opt"),
        ("input_embedding", 10, "enum:NetworkFormat.InputEmbeddingFormat", "opt"),
    ],
    "Format": [
        ("weights_encoding", 1, "enum:Format.Encoding", "opt"),
        ("network_format", 2, "msg:NetworkFormat", "opt"),
    ],
    "OnnxModel": [
        ("model", 1, "bytes", "opt"),
        ("data_type", 2, "enum:OnnxModel.DataType", "opt"),
        ("input_planes", 3, "string", "opt"),
        ("output_value", 4, "string", "opt"),
        ("output_wdl", 5, "string", "opt"),
        ("output_policy", 6, "string", "opt"),
        ("output_mlh", 7, "string", "opt"),
    ],
    "Net": [
        ("magic", 1, "fixed32", "opt"),
        ("license", 2, "string", "opt"),
        ("min_version", 3, "msg:EngineVersion", "opt"),
        ("format", 4, "msg:Format", "opt"),
        ("training_params", 5, "msg:TrainingParams", "opt"),
        ("weights", 10, "msg:Weights", "opt"),
        ("onnx_model", 11, "msg:OnnxModel", "opt"),
    ],
}

_CB = "msg:Weights.ConvBlock"
_MESSAGES["Weights"] = [
    ("input", 1, _CB, "opt"),
    ("residual", 2, "msg:Weights.Residual", "rep"),
    ("policy", 3, _CB, "opt"),
    ("ip_pol_w", 4, L, "opt"), ("ip_pol_b", 5, L, "opt"),
    ("value", 6, _CB, "opt"),
    ("ip1_val_w", 7, L, "opt"), ("ip1_val_b", 8, L, "opt"),
    ("ip2_val_w", 9, L, "opt"), ("ip2_val_b", 10, L, "opt"),
    ("policy1", 11, _CB, "opt"),
    ("moves_left", 12, _CB, "opt"),
    ("ip1_mov_w", 13, L, "opt"), ("ip1_mov_b", 14, L, "opt"),
    ("ip2_mov_w", 15, L, "opt"), ("ip2_mov_b", 16, L, "opt"),
    ("ip2_pol_w", 17, L, "opt"), ("ip2_pol_b", 18, L, "opt"),
    ("ip3_pol_w", 19, L, "opt"), ("ip3_pol_b", 20, L, "opt"),
    ("pol_encoder", 21, "msg:Weights.EncoderLayer", "rep"),
    ("ip4_pol_w", 22, L, "opt"),
    ("pol_headcount", 24, "uint32", "opt"),
    ("ip_emb_w", 25, L, "opt"), ("ip_emb_b", 26, L, "opt"),
    ("encoder", 27, "msg:Weights.EncoderLayer", "rep"),
    ("headcount", 28, "uint32", "opt"),
    ("ip_val_w", 29, L, "opt"), ("ip_val_b", 30, L, "opt"),
    ("ip_mov_w", 31, L, "opt"), ("ip_mov_b", 32, L, "opt"),
    ("ip_mult_gate", 33, L, "opt"), ("ip_add_gate", 34, L, "opt"),
    ("smolgen_w", 35, L, "opt"), ("smolgen_b", 36, L, "opt"),
    ("ip_emb_preproc_w", 37, L, "opt"), ("ip_emb_preproc_b", 38, L, "opt"),
    ("ip_emb_ln_gammas", 39, L, "opt"), ("ip_emb_ln_betas", 40, L, "opt"),
    ("ip_emb_ffn", 41, "msg:Weights.FFN", "opt"),
    ("ip_emb_ffn_ln_gammas", 42, L, "opt"), ("ip_emb_ffn_ln_betas", 43, L, "opt"),
    ("value_heads", 44, "msg:Weights.ValueHeads", "opt"),
    ("policy_heads", 45, "msg:Weights.PolicyHeads", "opt"),
]


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(name="lc0_rocm/net.proto", package=PACKAGE, syntax="proto2")
    protos: dict[str, descriptor_pb2.DescriptorProto] = {}
    for path in _MESSAGES:
        parent, _, name = path.rpartition(".")
        container = protos[parent].nested_type if parent else fdp.message_type
        protos[path] = container.add(name=name)
    for (owner, name), values in _ENUMS.items():
        enum = protos[owner].enum_type.add(name=name)
        for vname, number in values:
            enum.value.add(name=vname, number=number)
    for path, fields in _MESSAGES.items():
        for fname, number, ftype, label in fields:
            f = protos[path].field.add(name=fname, number=number)
            f.label = _F.LABEL_REPEATED if label == "rep" else _F.LABEL_OPTIONAL
            if ftype.startswith("msg:"):
                f.type, f.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{ftype[4:]}"
            elif ftype.startswith("enum:"):
                f.type, f.type_name = _F.TYPE_ENUM, f".{PACKAGE}.{ftype[5:]}"
            else:
                f.type = _SCALARS[ftype]
    return fdp


_pool = descriptor_pool.DescriptorPool()
_file = _pool.Add(_build_file())


def message_class(path: str):
    """The generated class of a message, by its dotted path inside the package (e.g. "Weights.Layer")."""
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{PACKAGE}.{path}"))


Net = message_class("Net")
EngineVersion = message_class("EngineVersion")
Format = message_class("Format")
NetworkFormat = message_class("NetworkFormat")
TrainingParams = message_class("TrainingParams")
OnnxModel = message_class("OnnxModel")
Weights = message_class("Weights")
Layer = message_class("Weights.Layer")


def enum_value(enum: str, name: str) -> int:
    """Number of an enum value, e.g. enum_value("NetworkFormat.NetworkStructure", "NETWORK_SE") == 2."""
    return _pool.FindEnumTypeByName(f"{PACKAGE}.{enum}").values_by_name[name].number


def enum_name(enum: str, number: int) -> str:
    """Name of an enum number, or the number as text when the schema does not know it."""
    v = _pool.FindEnumTypeByName(f"{PACKAGE}.{enum}").values_by_number.get(number)
    return v.name if v is not None else str(number)
