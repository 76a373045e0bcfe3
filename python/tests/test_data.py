"""weft.data: tf.data's names and semantics on weft's pools."""
import os
import time

import numpy as np
import pytest

import weft
from weft.data import AUTOTUNE, Dataset


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def test_range_map_batch_take_skip_repeat():
    assert values(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(2, 8, 2)) == [2, 4, 6]
    assert values(Dataset.range(10).skip(2).take(3)) == [2, 3, 4]
    assert values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(Dataset.range(7).map(lambda x: x * 10).batch(3)) == [
        [0, 10, 20], [30, 40, 50], [60]]
    assert values(Dataset.range(7).batch(3, drop_remainder=True)) == [
        [0, 1, 2], [3, 4, 5]]


def test_dict_and_tuple_elements_keep_their_structure():
    ds = Dataset.from_tensor_slices({"x": np.arange(4.0), "y": np.arange(4)})
    first = next(iter(ds))
    assert set(first) == {"x", "y"} and first["y"] == 0
    pairs = ds.map(lambda d: (d["x"] * 2, d["y"]), num_parallel_calls=2).batch(2)
    x, y = next(iter(pairs))
    assert x.tolist() == [0.0, 2.0] and y.tolist() == [0, 1]
    nested = Dataset.from_tensor_slices(({"a": np.arange(3)}, np.arange(3) * 5))
    features, label = list(nested)[2]
    assert features["a"] == 2 and label == 10


def test_generator_zip_enumerate_filter():
    def gen():
        for i in range(4):
            yield np.full((2,), i, np.int32)
    ds = Dataset.from_generator(gen)
    assert [x.tolist() for x in ds] == [[0, 0], [1, 1], [2, 2], [3, 3]]
    # A fresh generator per pass.
    assert len(list(ds.repeat(2))) == 8
    zipped = Dataset.zip((Dataset.range(3), Dataset.range(10, 20)))
    assert [(int(a), int(b)) for a, b in zipped] == [(0, 10), (1, 11), (2, 12)]
    numbered = [(int(i), int(x)) for i, x in Dataset.range(5, 8).enumerate()]
    assert numbered == [(0, 5), (1, 6), (2, 7)]
    assert values(Dataset.range(8).filter(lambda x: x % 3 == 0)) == [0, 3, 6]


def test_shuffle_is_seeded_and_a_permutation():
    a = values(Dataset.range(50).shuffle(10, seed=3))
    assert a == values(Dataset.range(50).shuffle(10, seed=3))
    assert a != values(Dataset.range(50).shuffle(10, seed=4))
    assert sorted(a) == list(range(50))
    two = values(Dataset.range(20).shuffle(20, seed=1).repeat(2))
    assert two[:20] != two[20:]


def test_interleave_follows_tf_data_order():
    ds = Dataset.range(1, 6).interleave(
        lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
        block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4,
                          4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]


def test_padded_batch_unbatch_cache(tmp_path):
    ds = Dataset.range(1, 4).map(lambda n: np.ones(int(n), np.float32))
    batch = next(iter(ds.padded_batch(3)))
    assert batch.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    # padding_values: a Python number, converted to the component's dtype.
    batch = next(iter(ds.padded_batch(2, padding_values=-1)))
    assert batch.dtype == np.float32 and batch.tolist() == [[1, -1], [1, 1]]
    pairs = Dataset.range(1, 3).map(
        lambda n: (np.ones(int(n), np.int32), np.array(["a"] * int(n))))
    ints, words = next(iter(pairs.padded_batch(2, padding_values=(7, "-"))))
    assert ints.tolist() == [[1, 7], [1, 1]]
    assert words.tolist() == [["a", "-"], ["a", "a"]]
    assert values(Dataset.range(5).batch(2).unbatch()) == [0, 1, 2, 3, 4]
    calls = []

    def counted(x):
        value = int(x)  # Not traceable: runs as Python from the start.
        calls.append(1)
        return value
    cached = Dataset.range(4).map(counted).cache(str(tmp_path / "c"))
    assert values(cached) == values(cached) == [0, 1, 2, 3]
    assert len(calls) == 4


def test_parallel_map_keeps_order_and_python_errors_come_back():
    ds = Dataset.range(40).map(lambda x: x * x, num_parallel_calls=AUTOTUNE)
    assert values(ds) == [x * x for x in range(40)]

    def fail_on_three(x):
        if x == 3:
            raise KeyError("three")
        return x
    it = iter(Dataset.range(6).map(fail_on_three, num_parallel_calls=2))
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(KeyError):
        next(it)
    assert int(next(it)) == 4  # Errors are per element.
    skipping = Dataset.range(6).map(fail_on_three, 2).ignore_errors()
    iterator = iter(skipping)
    assert [int(x) for x in iterator] == [0, 1, 2, 4, 5]
    assert iterator.stats()[-1]["skipped"] == 1


def test_traced_map_runs_weft_ops_as_a_graph(tmp_path):
    for k in range(3):
        image = np.full((20, 30, 3), k * 40, np.uint8)
        (tmp_path / f"{k}.png").write_bytes(
            np.asarray(weft.ops.encode_png(image)).item())
    files = Dataset.list_files(str(tmp_path / "*.png"), shuffle=False)
    ds = files.map(lambda p: weft.ops.resize(
        weft.ops.decode_image(weft.ops.read_file(p)), [10, 15]),
        num_parallel_calls=AUTOTUNE)
    assert "ParallelMap" in repr(ds)
    out = list(ds)
    assert [x.shape for x in out] == [(10, 15, 3)] * 3
    assert [float(x[0, 0, 0]) for x in out] == [0.0, 40.0, 80.0]
    # The same ops eagerly, on arrays.
    eager = weft.ops.resize(np.full((20, 30, 3), 40, np.uint8), [10, 15])
    np.testing.assert_array_equal(eager, out[1])


def test_map_with_a_weft_graph():
    g = weft.Graph()
    x = g.placeholder("x", np.float32)
    g.outputs = [g.op("Mul", [x, x])]
    ds = Dataset.from_tensor_slices(np.arange(4, dtype=np.float32)).map(g, 2)
    assert values(ds) == [0.0, 1.0, 4.0, 9.0]


def test_bad_inputs_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="no file matches"):
        Dataset.list_files(str(tmp_path / "*.jpg"))
    (tmp_path / "bad.jpg").write_bytes(b"\xff\xd8\xff not really")
    ds = Dataset.list_files(str(tmp_path / "*.jpg")).map(
        lambda p: weft.ops.decode_image(weft.ops.read_file(p)))
    with pytest.raises(ValueError, match="JPEG"):
        list(ds)
    with pytest.raises(ValueError, match="element 1 is"):
        list(Dataset.range(1, 3).map(lambda n: np.ones(int(n))).batch(2))


def test_stats_name_each_stage():
    stats = Dataset.range(20).map(lambda x: x + 1, 2).batch(5).prefetch(2).stats()
    assert [s["stage"] for s in stats] == ["Range", "ParallelMap", "Batch",
                                           "Prefetch"]
    assert stats[1]["elements"] == 20 and stats[2]["elements"] == 4
    assert stats[1]["parallelism"] == 2
    assert not stats[1]["autotuned"]


def test_stats_say_what_autotune_chose_and_the_bottleneck():
    def slow(x):
        time.sleep(0.005)
        return x
    # Nothing consumes but the pass itself: the map limits it, and AUTOTUNE
    # chose its calls in flight and the buffer.
    stats = Dataset.range(40).map(slow, AUTOTUNE).prefetch(AUTOTUNE).stats()
    by_stage = {s["stage"]: s for s in stats}
    assert by_stage["ParallelMap"]["autotuned"]
    assert by_stage["Prefetch"]["autotuned"]
    assert by_stage["ParallelMap"]["parallelism"] >= 1
    assert [s["stage"] for s in stats if s["bottleneck"]] == ["ParallelMap"]


def test_options_give_a_private_pool_and_turn_autotune_off():
    options = weft.data.Options()
    options.threading.private_threadpool_size = 3
    options.autotune.enabled = False
    ds = (Dataset.range(30).map(lambda x: x * 2, AUTOTUNE).prefetch(AUTOTUNE)
          .with_options(options))
    # Options survive later transformations, as in tf.data.
    ds = ds.take(20)
    iterator = iter(ds)
    assert [int(x) for x in iterator] == list(range(0, 40, 2))
    by_stage = {s["stage"]: s for s in iterator.stats()}
    # Not tuned: one call per thread of the private pool, two ahead.
    assert by_stage["ParallelMap"]["parallelism"] == 3
    assert by_stage["Prefetch"]["parallelism"] == 2
    assert ds.options().threading.private_threadpool_size == 3


def test_options_are_checked():
    options = weft.data.Options()
    with pytest.raises(ValueError, match="private_threadpool_size"):
        options.threading.private_threadpool_size = -1
    with pytest.raises(ValueError, match="autotune.enabled"):
        options.autotune.enabled = "yes"
    with pytest.raises(AttributeError, match="no option 'max_intra'"):
        options.threading.max_intra = 1
    with pytest.raises(TypeError, match="weft.data.Options"):
        Dataset.range(3).with_options({"autotune": False})


def test_iterator_get_next_reads_a_batch_per_run():
    ds = Dataset.range(4).map(lambda i: np.full((2, 2), i, np.float32)).prefetch(2)
    weft.data.register_iterator("test_batches", ds)
    try:
        g = weft.Graph()
        batch = g.op("IteratorGetNext", [], iterator="test_batches",
                     output_types=[np.float32])
        total = g.op("ReduceSum", [batch], keepdims=0)
        session = weft.Session(g)
        assert [float(session.run(total)) for _ in range(4)] == [0, 4, 8, 12]
        with pytest.raises(Exception, match="end of sequence"):
            session.run(total)
    finally:
        weft.data.unregister_iterator("test_batches")
