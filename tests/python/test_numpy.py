"""Running models on NumPy arrays: parity with PyTorch's recorded outputs, outputs written in place
(zero-copy), errors with the runtime's messages, and concurrent calls."""
import threading
import unittest

import numpy as np

import support

import thunderc


def setUpModule():
    global mlp, db, two
    mlp, db, two = support.open_shared_models()


def tearDownModule():
    for m in (mlp, db, two):
        m.close()


class ParityTest(unittest.TestCase):
    def test_mlp_matches_pytorch(self):
        x = support.load_npy("mlp.input.npy")
        y = mlp(x)
        self.assertIsInstance(y, np.ndarray)
        self.assertEqual((y.dtype, y.shape), (np.float32, (4, 8)))
        np.testing.assert_allclose(y, support.load_npy("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)
        self.assertEqual(len(mlp.run(x)), 1)  # run() always gives a tuple

    def test_symbolic_batch_sizes(self):
        x4 = support.load_npy("dynamic_batch.input.npy")
        y4 = support.load_npy("dynamic_batch.expected.npy")
        for n in (1, 3, 16):
            with self.subTest(batch=n):
                y = db(support.repeat_rows(x4, n))
                self.assertEqual(y.shape, (n, 6))  # allocated from thunderc_model_output_shape
                np.testing.assert_allclose(y, support.repeat_rows(y4, n), rtol=support.RTOL, atol=support.ATOL)

    def test_two_outputs_come_as_a_tuple_from_the_matching_variant(self):
        for rows, variant in ((2, 0), (4, 1)):
            with self.subTest(rows=rows):
                x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) - 2.5
                self.assertEqual(two.select_variant(x).id, variant)
                y, rowsum = two(x)
                np.testing.assert_array_equal(y, 2 * x + 1)  # exact in float32
                np.testing.assert_array_equal(rowsum, x.sum(1))
                self.assertEqual(rowsum.shape, (rows,))


class ZeroCopyTest(unittest.TestCase):
    def test_out_is_written_in_place_and_returned(self):
        x = support.load_npy("mlp.input.npy")
        out = np.full((4, 8), np.nan, np.float32)
        r1 = mlp(x, out=out)
        self.assertIs(r1, out)
        r2 = mlp(x * 2, out=out)  # a second run into the same buffer
        self.assertIs(r2, out)
        np.testing.assert_array_equal(out, mlp(x * 2))
        y, s = np.empty((2, 3), np.float32), np.empty(2, np.float32)
        res = two(np.ones((2, 3), np.float32), out=[y, s])
        self.assertIs(res[0], y)
        self.assertIs(res[1], s)
        np.testing.assert_array_equal(s, [3, 3])

    def test_views_into_one_buffer_are_used_where_they_are(self):
        # Input and output are views at byte offsets of one buffer: the runtime reads and writes there.
        x = support.load_npy("mlp.input.npy")
        buf = np.zeros(1 + 64 + 32, np.float32)
        xv = buf[1:65].reshape(4, 16)  # 4 bytes past the start of the allocation
        yv = buf[65:].reshape(4, 8)
        xv[...] = x
        self.assertIs(mlp(xv, out=yv), yv)
        np.testing.assert_allclose(buf[65:].reshape(4, 8), support.load_npy("mlp.expected.npy"),
                                   rtol=support.RTOL, atol=support.ATOL)
        self.assertEqual(buf[0], 0)

    def test_the_runtime_sees_the_arrays_own_memory(self):
        # An output overlapping the input in memory is refused by the runtime, which compares addresses: the
        # DLTensors it got point into this buffer, not at copies.
        buf = np.zeros(64 + 16, np.float32)
        x = buf[:64].reshape(4, 16)
        y = buf[48:80].reshape(4, 8)
        with self.assertRaises(thunderc.Error) as cm:
            mlp(x, out=y)
        self.assertEqual(cm.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("output 'output0' (#0) overlaps input 'x' (#0) in memory", cm.exception.message)

    def test_read_only_input(self):
        x = support.load_npy("mlp.input.npy")
        x.flags.writeable = False
        np.testing.assert_allclose(mlp(x), support.load_npy("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)


class ErrorsTest(unittest.TestCase):
    def assertError(self, code_name, fragments, fn, *args, **kwargs):
        with self.assertRaises(thunderc.Error) as cm:
            fn(*args, **kwargs)
        e = cm.exception
        self.assertEqual(e.code_name, code_name, str(e))
        for f in fragments:
            self.assertIn(f, str(e))
        return e

    def test_wrong_dtype(self):
        e = self.assertError("NO_MATCHING_VARIANT", ["input 'x': expected dtype float32, got float64"],
                             mlp, np.zeros((4, 16), np.float64))
        self.assertEqual(e.code, thunderc.StatusCode.NO_MATCHING_VARIANT)
        self.assertTrue(e.message.startswith("no variant of "))

    def test_wrong_shape(self):
        self.assertError("NO_MATCHING_VARIANT",
                         ["input 'x' has shape [3, 16] float32 cpu", "expected shape [4, 16], got [3, 16]"],
                         mlp, np.zeros((3, 16), np.float32))

    def test_symbolic_size_out_of_range(self):
        self.assertError("NO_MATCHING_VARIANT", ["s77", "17", "1..16"], db, np.zeros((17, 12), np.float32))

    def test_wrong_number_of_inputs(self):
        x = np.zeros((4, 16), np.float32)
        self.assertError("INVALID_ARGUMENT", ["takes 1 input(s) (x), got 2"], mlp, x, x)
        self.assertError("INVALID_ARGUMENT", ["takes 1 input(s) (x), got 0"], mlp)

    def test_non_contiguous_input_names_the_strides_and_the_fix(self):
        x = np.zeros((4, 32), np.float32)[:, ::2]
        e = self.assertError("NO_MATCHING_VARIANT", ["expected a contiguous tensor, got strides [32, 2]",
                                                     "numpy.ascontiguousarray"], mlp, x)
        self.assertIsNotNone(e.hint)
        np.testing.assert_allclose(mlp(np.ascontiguousarray(x)), mlp(np.zeros((4, 16), np.float32)))

    def test_wrong_out_buffers(self):
        x = np.zeros((4, 16), np.float32)
        self.assertError("INVALID_ARGUMENT", ["output 'output0' (#0)", "expected a contiguous float32[4, 8] cpu tensor",
                                              "got float32[8, 4]"], mlp, x, out=np.empty((8, 4), np.float32))
        self.assertError("INVALID_ARGUMENT", ["got float64[4, 8]"], mlp, x, out=np.empty((4, 8), np.float64))
        self.assertError("INVALID_ARGUMENT", ["has 2 output(s), got 1 output buffers"],
                         two, np.zeros((2, 3), np.float32), out=np.empty((2, 3), np.float32))
        ro = np.empty((4, 8), np.float32)
        ro.flags.writeable = False
        self.assertError("INVALID_ARGUMENT", ["output 'output0' (#0): the numpy array is read-only"], mlp, x, out=ro)

    def test_values_that_are_not_arrays(self):
        self.assertError("INVALID_ARGUMENT", ["input 'x' (#0): expected a numpy.ndarray or a torch.Tensor, got list",
                                              "numpy.asarray"], mlp, [[0.0] * 16] * 4)
        self.assertError("INVALID_ARGUMENT", ["numpy dtype object has no DLPack equivalent"],
                         mlp, np.empty((4, 16), object))
        self.assertError("INVALID_ARGUMENT", ["non-native byte order >f4", "newbyteorder"],
                         mlp, np.zeros((4, 16), ">f4"))


class ThreadsTest(unittest.TestCase):
    def test_concurrent_calls_on_one_model(self):
        x4 = support.load_npy("dynamic_batch.input.npy")
        want = {n: db(support.repeat_rows(x4, n)) for n in (1, 5, 16)}
        errors = []

        def work(n):
            try:
                x = support.repeat_rows(x4, n)
                for _ in range(50):
                    np.testing.assert_array_equal(db(x), want[n])
            except Exception as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in (1, 5, 16, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_close_waits_for_calls_in_flight(self):
        m = thunderc.load(support.compile_pt2("dynamic_batch", "--executors", "cpp,blas"))
        x = support.repeat_rows(support.load_npy("dynamic_batch.input.npy"), 16)
        results = []
        started = threading.Event()

        def work():
            started.set()
            while True:
                try:
                    results.append(m(x).shape)
                except thunderc.Error as e:
                    results.append(e.message)
                    return

        t = threading.Thread(target=work)
        t.start()
        started.wait()
        m.close()
        t.join()
        self.assertTrue(results[-1].endswith("is closed"), results[-1])
        self.assertTrue(all(r == (16, 6) for r in results[:-1]))


if __name__ == "__main__":
    unittest.main()
