#!/usr/bin/python3
"""Writes the hostile and broken ONNX files of this folder.

Each file breaks one rule; expected.txt lists, per file, the exit code
`weft run FILE` must give (2: refused on load or compile, 1: failed at Run)
and a regular expression its message must match. Run from anywhere:
    /usr/bin/python3 tests/bad_input/onnx/make_corpus.py
The files are checked in; rerun this after changing a case.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def model(nodes, inputs=(), outputs=(), inits=(), opset=13, ir=7, **kw):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs),
                          initializer=list(inits), **kw)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]
                          if opset is not None else [],
                          producer_name="weft-corpus")
    m.ir_version = ir
    return m


def out(name="y", t=F, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def save(name, m):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(m if isinstance(m, bytes) else m.SerializeToString())


def ext_tensor(name, location, offset=None, length=None, dims=(4,)):
    t = TensorProto(name=name, data_type=F, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset),
                 ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


relu = helper.make_node("Relu", ["x"], ["y"])
x_init = const("x", np.ones(4, np.float32))
good = model([relu], outputs=[out()], inits=[x_init])

# --- Not a model at all ---------------------------------------------------
save("empty.onnx", b"")
save("garbage.onnx", bytes(range(256)) * 4)
save("truncated.onnx", good.SerializeToString()[:40])
save("text_file.onnx", b"ir_version: 7\ngraph { node { op_type: 'Relu' } }\n")

# --- Ops, domains, opsets --------------------------------------------------
save("unknown_op.onnx",
     model([helper.make_node("FooBar", ["x"], ["y"])], outputs=[out()],
           inits=[x_init]))
m = model([helper.make_node("Foo", ["x"], ["y"], domain="com.example")],
          outputs=[out()], inits=[x_init])
m.opset_import.append(helper.make_opsetid("com.example", 1))
save("unknown_domain.onnx", m)
save("opset_99.onnx", model([relu], outputs=[out()], inits=[x_init], opset=99))
save("opset_1.onnx", model([relu], outputs=[out()], inits=[x_init], opset=1))
save("no_opset.onnx", model([relu], outputs=[out()], inits=[x_init],
                            opset=None))

# --- Graph structure -------------------------------------------------------
save("undefined_input.onnx",
     model([helper.make_node("Relu", ["nowhere"], ["y"])], outputs=[out()]))
save("output_never_produced.onnx",
     model([relu], outputs=[out("z")], inits=[x_init]))
save("cycle.onnx",
     model([helper.make_node("Relu", ["b"], ["a"]),
            helper.make_node("Relu", ["a"], ["b"])], outputs=[out("b")]))
save("tensor_produced_twice.onnx",
     model([relu, helper.make_node("Neg", ["x"], ["y"])], outputs=[out()],
           inits=[x_init]))
save("output_listed_twice.onnx",
     model([relu], outputs=[out(), out()], inits=[x_init]))
save("node_without_input.onnx",
     model([helper.make_node("Relu", [], ["y"])], outputs=[out()]))
save("node_without_output.onnx",
     model([helper.make_node("Relu", ["x"], []), relu], outputs=[out()],
           inits=[x_init]))
save("sequence_of_sequences_input.onnx",
     model([helper.make_node("Identity", ["s"], ["y"])],
           inputs=[helper.make_value_info("s", helper.make_sequence_type_proto(
               helper.make_sequence_type_proto(
                   helper.make_tensor_type_proto(F, [2]))))],
           outputs=[out()]))
map_type = onnx.TypeProto()
map_type.map_type.key_type = TensorProto.INT64
map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, [2]))
save("map_input.onnx",
     model([helper.make_node("Identity", ["s"], ["y"])],
           inputs=[helper.make_value_info("s", map_type)], outputs=[out()]))
save("string_cast_of_no_number.onnx",
     model([helper.make_node("Constant", [], ["s"],
                             value_strings=["1.5", "1.5x"]),
            helper.make_node("Cast", ["s"], ["y"], to=F)], outputs=[out()]))
save("string_normalizer_of_unknown_locale.onnx",
     model([helper.make_node("Constant", [], ["s"], value_strings=["i"]),
            helper.make_node("StringNormalizer", ["s"], ["y"],
                             case_change_action="UPPER", locale="tr_TR")],
           outputs=[out("y", TensorProto.STRING)], opset=10))
short_strings = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"])
short_strings.dims[0] = 3  # Three strings declared, two stored.
save("string_tensor_of_wrong_count.onnx",
     model([helper.make_node("Identity", ["s"], ["y"])],
           outputs=[out("y", TensorProto.STRING)], inits=[short_strings]))
save("input_unknown_dtype.onnx",
     model([relu], inputs=[helper.make_tensor_value_info("x", 99, [4])],
           outputs=[out()]))

# --- Attributes ------------------------------------------------------------
save("attr_wrong_type.onnx",
     model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)],
           outputs=[out()], inits=[x_init]))
save("attr_axis_out_of_range.onnx",
     model([helper.make_node("Softmax", ["x"], ["y"], axis=7)],
           outputs=[out()], inits=[x_init]))
save("attr_unknown.onnx",
     model([helper.make_node("Relu", ["x"], ["y"], frobnicate=3)],
           outputs=[out()], inits=[x_init]))
save("attr_bad_dtype.onnx",
     model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.COMPLEX64)],
           outputs=[out()], inits=[x_init]))
save("attr_bad_auto_pad.onnx",
     model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                             auto_pad="SIDEWAYS")],
           outputs=[out()], inits=[const("x", np.ones((1, 1, 4, 4),
                                                      np.float32))]))
save("constant_without_value.onnx",
     model([helper.make_node("Constant", [], ["y"])], outputs=[out()]))

# --- Initializers ----------------------------------------------------------
t = TensorProto(name="x", data_type=F, dims=[4], raw_data=b"\0" * 8)
save("init_raw_size_mismatch.onnx", model([relu], outputs=[out()], inits=[t]))
t = TensorProto(name="x", data_type=F, dims=[4], float_data=[1, 2, 3])
save("init_typed_count_mismatch.onnx",
     model([relu], outputs=[out()], inits=[t]))
t = TensorProto(name="x", data_type=F, dims=[-4], raw_data=b"")
save("init_negative_dim.onnx", model([relu], outputs=[out()], inits=[t]))
t = TensorProto(name="x", data_type=F, dims=[1 << 32, 1 << 32], raw_data=b"")
save("init_dims_overflow.onnx", model([relu], outputs=[out()], inits=[t]))
t = TensorProto(name="x", data_type=F, dims=[1 << 40], raw_data=b"\0" * 16)
save("init_huge_dims_small_data.onnx",
     model([relu], outputs=[out()], inits=[t]))
t = TensorProto(name="x", data_type=TensorProto.BOOL, dims=[2],
                raw_data=b"\x01\x07")
save("init_bool_not_0_or_1.onnx",
     model([helper.make_node("Not", ["x"], ["y"])],
           outputs=[out("y", TensorProto.BOOL)], inits=[t]))
t = TensorProto(name="x", data_type=TensorProto.INT8, dims=[2],
                int32_data=[1, 300])
save("init_int8_out_of_range.onnx",
     model([helper.make_node("Identity", ["x"], ["y"])],
           outputs=[out("y", TensorProto.INT8)], inits=[t]))
t = TensorProto(name="x", data_type=TensorProto.FLOAT16, dims=[1],
                int32_data=[70000])
save("init_float16_bad_bits.onnx",
     model([helper.make_node("Identity", ["x"], ["y"])],
           outputs=[out("y", TensorProto.FLOAT16)], inits=[t]))
t = TensorProto(name="x", data_type=TensorProto.COMPLEX64, dims=[1],
                float_data=[0, 0])
save("init_unsupported_dtype.onnx",
     model([helper.make_node("Identity", ["x"], ["y"])],
           outputs=[out("y", TensorProto.COMPLEX64)], inits=[t]))

# --- External data ---------------------------------------------------------
with open(os.path.join(HERE, "weights.bin"), "wb") as f:
    f.write(np.arange(4, dtype=np.float32).tobytes())
for name, tensor in [
        ("external_missing_file.onnx", ext_tensor("x", "no_such_file.bin")),
        ("external_absolute_path.onnx", ext_tensor("x", "/etc/hostname")),
        ("external_dotdot.onnx", ext_tensor("x", "../onnx/weights.bin")),
        ("external_symlink_escape.onnx", ext_tensor("x", "escape_link.bin")),
        ("external_past_end.onnx", ext_tensor("x", "weights.bin", 8, 16)),
        ("external_length_mismatch.onnx",
         ext_tensor("x", "weights.bin", 0, 12)),
        ("external_no_location.onnx", ext_tensor("x", None)),
        ("external_negative_offset.onnx",
         ext_tensor("x", "weights.bin", -4, 16)),
]:
    save(name, model([relu], outputs=[out()], inits=[tensor]))
link = os.path.join(HERE, "escape_link.bin")
if not os.path.islink(link):
    os.symlink("/etc/hostname", link)

# --- Ranks, dtypes, shapes (compile time) ----------------------------------
save("matmul_inner_mismatch.onnx",
     model([helper.make_node("MatMul", ["a", "b"], ["y"])], outputs=[out()],
           inits=[const("a", np.ones((2, 3), np.float32)),
                  const("b", np.ones((4, 5), np.float32))]))
save("add_dtype_mismatch.onnx",
     model([helper.make_node("Add", ["a", "b"], ["y"])], outputs=[out()],
           inits=[const("a", np.ones(2, np.float32)),
                  const("b", np.ones(2, np.int64))]))
save("add_broadcast_mismatch.onnx",
     model([helper.make_node("Add", ["a", "b"], ["y"])], outputs=[out()],
           inits=[const("a", np.ones(3, np.float32)),
                  const("b", np.ones(4, np.float32))]))
save("reshape_wrong_count.onnx",
     model([helper.make_node("Reshape", ["x", "s"], ["y"])], outputs=[out()],
           inits=[x_init, const("s", np.array([3], np.int64))]))
save("split_sizes_mismatch.onnx",
     model([helper.make_node("Split", ["x", "s"], ["y", "z"])],
           outputs=[out(), out("z")],
           inits=[x_init, const("s", np.array([1, 2], np.int64))]))
save("slice_zero_step.onnx",
     model([helper.make_node("Slice", ["x", "b", "e", "a", "st"], ["y"])],
           outputs=[out()],
           inits=[x_init, const("b", np.array([0], np.int64)),
                  const("e", np.array([4], np.int64)),
                  const("a", np.array([0], np.int64)),
                  const("st", np.array([0], np.int64))]))

# --- Failures at Run (exit 1) ----------------------------------------------
save("gather_index_out_of_range.onnx",
     model([helper.make_node("Gather", ["x", "i"], ["y"])], outputs=[out()],
           inits=[x_init, const("i", np.array([7], np.int64))]))
save("conv_group_mismatch.onnx",
     model([helper.make_node("Conv", ["x", "w"], ["y"], group=3)],
           outputs=[out()],
           inits=[const("x", np.ones((1, 4, 3, 3), np.float32)),
                  const("w", np.ones((2, 2, 1, 1), np.float32))]))
save("topk_k_too_large.onnx",
     model([helper.make_node("TopK", ["x", "k"], ["y", "i"])],
           outputs=[out(), out("i", TensorProto.INT64)],
           inits=[x_init, const("k", np.array([9], np.int64))]))

# --- Subgraphs ---------------------------------------------------------------
then_g = helper.make_graph([helper.make_node("FooBar", ["x"], ["t"])], "then",
                           [], [out("t")])
else_g = helper.make_graph([helper.make_node("Relu", ["nowhere"], ["e"])],
                           "else", [], [out("e")])
save("if_with_bad_branches.onnx",
     model([helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                             else_branch=else_g)], outputs=[out()],
           inits=[x_init, const("c", np.array(True))]))
I64 = TensorProto.INT64
B = TensorProto.BOOL
loop_params = [out("i", I64, []), out("cond", B, [])]
body = helper.make_graph([helper.make_node("Relu", ["b"], ["a"]),
                          helper.make_node("Relu", ["a"], ["b"]),
                          helper.make_node("Identity", ["cond"], ["c2"])],
                         "body", loop_params, [out("c2", B), out("b")])
save("loop_with_cycle.onnx",
     model([helper.make_node("Loop", ["n", "c"], ["y"], body=body)],
           outputs=[out()],
           inits=[const("n", np.array(3, np.int64)),
                  const("c", np.array(True))]))
save("if_without_branches.onnx",
     model([helper.make_node("If", ["c"], ["y"])], outputs=[out()],
           inits=[const("c", np.array(True))]))

# --- Control flow that compiles but cannot run, or runs away ---------------
# Loop(M, cond, v) with body (i, cond, v) -> (cond, v + x, scan: v), x read
# from the outer scope.
def loop_model(m, with_cond=True, body_outputs=None, scan=True):
    nodes = [helper.make_node("Add", ["v", "x"], ["v2"]),
             helper.make_node("Identity", ["cond"], ["c2"]),
             helper.make_node("Identity", ["v"], ["s"])]
    outs = body_outputs or ([out("c2", B), out("v2")] +
                            ([out("s")] if scan else []))
    g = helper.make_graph(nodes, "body", loop_params + [out("v")], outs)
    ins = ["m", "c" if with_cond else "", "v0"]
    return model([helper.make_node("Loop", ins,
                                   ["y"] + (["ys"] if scan else []), body=g)],
                 outputs=[out()],
                 inits=[x_init, const("m", np.array(m, np.int64)),
                        const("c", np.array(True)),
                        const("v0", np.zeros(4, np.float32))])


save("loop_body_missing_outputs.onnx",
     loop_model(3, body_outputs=[out("c2", B)], scan=False))
save("loop_negative_trip_count.onnx", loop_model(-5))
save("loop_absurd_trip_count.onnx", loop_model(1 << 60, with_cond=False))
then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then",
                           [], [out("t")])
save("if_cond_of_two_elements.onnx",
     model([helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                             else_branch=then_g)], outputs=[out()],
           inits=[x_init, const("c", np.array([True, False]))]))
scan_body = helper.make_graph([helper.make_node("Add", ["s", "r"], ["s2"])],
                              "body", [out("s"), out("r")], [out("s2")])
save("scan_axis_out_of_range.onnx",
     model([helper.make_node("Scan", ["s0", "x"], ["y"], body=scan_body,
                             num_scan_inputs=1, scan_input_axes=[5])],
           outputs=[out()],
           inits=[x_init, const("s0", np.zeros((), np.float32))]))

# --- Random ops ---------------------------------------------------------------
save("random_seed_out_of_range.onnx",
     model([helper.make_node("RandomUniform", [], ["y"], shape=[2],
                             seed=1.6e28)], outputs=[out()]))

# --- Quantization ------------------------------------------------------------
save("quantize_zero_scale.onnx",
     model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
           outputs=[out("y", TensorProto.UINT8)],
           inits=[x_init, const("s", np.array(0, np.float32)),
                  const("z", np.array(0, np.uint8))]))
save("dequantize_zero_point_of_wrong_dtype.onnx",
     model([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
           outputs=[out()],
           inits=[const("q", np.ones(4, np.int8)),
                  const("s", np.array(0.5, np.float32)),
                  const("z", np.array(0, np.int32))]))
# --- Sequences and optionals --------------------------------------------------
seq_of_x = helper.make_node("SequenceConstruct", ["x"], ["s"])
seq_out = helper.make_tensor_sequence_value_info("y", F, None)
save("sequence_position_out_of_range.onnx",
     model([seq_of_x, helper.make_node("SequenceAt", ["s", "p"], ["y"])],
           outputs=[out()],
           inits=[x_init, const("p", np.array(5, np.int64))]))
save("sequence_insert_of_wrong_dtype.onnx",
     model([seq_of_x, helper.make_node("SequenceInsert", ["s", "i"], ["y"])],
           outputs=[seq_out],
           inits=[x_init, const("i", np.ones(4, np.int64))]))
save("sequence_erase_from_empty.onnx",
     model([helper.make_node("SequenceEmpty", [], ["e"]),
            helper.make_node("SequenceErase", ["e"], ["y"])],
           outputs=[seq_out]))
save("concat_from_empty_sequence.onnx",
     model([helper.make_node("SequenceEmpty", [], ["e"]),
            helper.make_node("ConcatFromSequence", ["e"], ["y"], axis=0)],
           outputs=[out()]))
save("optional_get_element_of_empty.onnx",
     model([helper.make_node("Optional", [], ["o"],
                             type=helper.make_tensor_type_proto(F, [4])),
            helper.make_node("OptionalGetElement", ["o"], ["y"])],
           outputs=[out()], opset=16))
map_body = helper.make_graph([helper.make_node("Relu", ["i"], ["a"])],
                             "body", [out("i")], [out("a")])
save("sequence_map_body_missing_outputs.onnx",
     model([seq_of_x, helper.make_node("SequenceMap", ["s"], ["y", "z"],
                                       body=map_body)],
           outputs=[seq_out], inits=[x_init], opset=17))

# --- Opsets 20 and 23 ------------------------------------------------------
# An axis of -2^49 on an input of no declared rank (the ONNX loader
# fuzzer's find: the importer once listed 2^49 constant axes).
save("rms_normalization_far_axis.onnx",
     model([relu, helper.make_node("RMSNormalization", ["y", "s"], ["z"],
                                   axis=-(1 << 49))],
           outputs=[out("z")],
           inits=[x_init, const("s", np.ones(4, np.float32))], opset=23,
           ir=9))
save("regex_invalid_pattern.onnx",
     model([helper.make_node("RegexFullMatch", ["t"], ["y"], pattern="a(b")],
           outputs=[out("y", TensorProto.BOOL)],
           inits=[const("t", np.array(["ab"], dtype=object))], opset=20,
           ir=9))
save("image_decoder_bmp.onnx",
     model([helper.make_node("ImageDecoder", ["b"], ["y"])],
           outputs=[out("y", TensorProto.UINT8)],
           inits=[const("b", np.frombuffer(b"BM6\0\0\0\0\0", np.uint8))],
           opset=20, ir=9))

# --- 4-bit weights (opset 21) ------------------------------------------------
# Five INT4 values need three packed bytes; two hold four. And an int32_data
# entry holds two packed values, so 300 is none.
dq = helper.make_node("DequantizeLinear", ["w", "s"], ["y"])
short_int4 = TensorProto(name="w", data_type=22, dims=[5], raw_data=b"\x12\x34")
save("int4_raw_data_short.onnx",
     model([dq], outputs=[out("y")],
           inits=[short_int4, const("s", np.float32(0.5))], opset=21,
           ir=10))
wide_entry = TensorProto(name="w", data_type=21, dims=[2])
wide_entry.int32_data.append(300)
save("uint4_int32_data_entry_too_wide.onnx",
     model([dq], outputs=[out("y")],
           inits=[wide_entry, const("s", np.float32(0.5))], opset=21,
           ir=10))

# A FLOAT8E4M3FN value in int32_data is one byte's bits: 300 is none.
wide_float8 = TensorProto(name="w", data_type=17, dims=[1])
wide_float8.int32_data.append(300)
save("float8_int32_data_bits_too_wide.onnx",
     model([dq], outputs=[out("y")],
           inits=[wide_float8, const("s", np.float32(0.5))], opset=19,
           ir=9))

print("wrote", len([f for f in os.listdir(HERE) if f.endswith(".onnx")]),
      "models")
