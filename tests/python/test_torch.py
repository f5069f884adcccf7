"""Running models on torch tensors (Debian's python3-torch; missing torch fails these tests): torch outputs,
parity with PyTorch, zero-copy, and the errors particular to tensors."""
import unittest

import numpy as np

import support

torch = support.import_torch()

import thunderc  # noqa: E402  (after torch: the failure above should be the first thing reported)


def setUpModule():
    global mlp, db, two
    mlp, db, two = support.open_shared_models()


def tearDownModule():
    for m in (mlp, db, two):
        m.close()


def expected(name):
    return torch.from_numpy(support.load_npy(name))


class ParityTest(unittest.TestCase):
    def test_mlp_gives_a_torch_tensor_matching_pytorch(self):
        x = torch.from_numpy(support.load_npy("mlp.input.npy"))
        y = mlp(x)
        self.assertIsInstance(y, torch.Tensor)
        self.assertEqual((y.dtype, tuple(y.shape), y.device.type), (torch.float32, (4, 8), "cpu"))
        torch.testing.assert_close(y, expected("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)

    def test_against_torch_running_the_same_program(self):
        # two_variants computes y = 2x + 1 and rowsum = x.sum(1); torch computes the same here.
        torch.manual_seed(0)
        for rows in (2, 4):
            x = torch.randn(rows, 3)
            y, rowsum = two(x)
            torch.testing.assert_close(y, 2 * x + 1, rtol=0, atol=0)
            torch.testing.assert_close(rowsum, x.sum(1), rtol=1e-6, atol=1e-6)

    def test_symbolic_batch(self):
        x4 = support.load_npy("dynamic_batch.input.npy")
        y4 = support.load_npy("dynamic_batch.expected.npy")
        for n in (2, 9):
            y = db(torch.from_numpy(support.repeat_rows(x4, n)))
            self.assertEqual(tuple(y.shape), (n, 6))
            torch.testing.assert_close(y, torch.from_numpy(support.repeat_rows(y4, n)),
                                       rtol=support.RTOL, atol=support.ATOL)

    def test_requires_grad_input_is_read_as_is(self):
        x = torch.from_numpy(support.load_npy("mlp.input.npy")).requires_grad_()
        y = mlp(x)
        self.assertFalse(y.requires_grad)  # thunderc runs inference only
        torch.testing.assert_close(y, expected("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)

    def test_mixed_numpy_and_torch_inputs_give_torch(self):
        # Only one input here, so mix across calls: any torch input makes torch outputs.
        x = support.load_npy("mlp.input.npy")
        self.assertIsInstance(mlp(x), np.ndarray)
        self.assertIsInstance(mlp(torch.from_numpy(x)), torch.Tensor)


class ZeroCopyTest(unittest.TestCase):
    def test_out_tensor_is_written_in_place(self):
        x = torch.from_numpy(support.load_npy("mlp.input.npy"))
        out = torch.full((4, 8), float("nan"))
        ptr = out.data_ptr()
        self.assertIs(mlp(x, out=out), out)
        self.assertIs(mlp(x, out=out), out)
        self.assertEqual(out.data_ptr(), ptr)
        torch.testing.assert_close(out, expected("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)

    def test_views_with_storage_offsets(self):
        x = torch.from_numpy(support.load_npy("mlp.input.npy"))
        buf = torch.zeros(3 + 64 + 32)
        xv = buf[3:67].view(4, 16)
        yv = buf[67:].view(4, 8)
        xv.copy_(x)
        mlp(xv, out=yv)
        torch.testing.assert_close(buf[67:].view(4, 8), expected("mlp.expected.npy"), rtol=support.RTOL,
                                   atol=support.ATOL)

    def test_the_runtime_sees_the_tensors_own_memory(self):
        buf = torch.zeros(64 + 8)
        with self.assertRaises(thunderc.Error) as cm:
            mlp(buf[:64].view(4, 16), out=buf[40:72].view(4, 8))
        self.assertIn("overlaps input 'x' (#0) in memory", cm.exception.message)

    def test_numpy_input_and_torch_output_share_nothing_but_work(self):
        x = support.load_npy("mlp.input.npy")
        out = torch.empty(4, 8)
        self.assertIs(mlp(x, out=out), out)
        torch.testing.assert_close(out, expected("mlp.expected.npy"), rtol=support.RTOL, atol=support.ATOL)


class ErrorsTest(unittest.TestCase):
    def test_wrong_dtype(self):
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 16, dtype=torch.float64))
        self.assertEqual(cm.exception.code_name, "NO_MATCHING_VARIANT")
        self.assertIn("expected dtype float32, got float64", cm.exception.message)
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 16, dtype=torch.bfloat16))
        self.assertIn("got bfloat16", cm.exception.message)

    def test_wrong_shape_and_count(self):
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 17))
        self.assertIn("expected shape [4, 16], got [4, 17]", cm.exception.message)
        with self.assertRaises(thunderc.Error) as cm:
            two(torch.zeros(2, 3), torch.zeros(2, 3))
        self.assertIn("takes 1 input(s) (x), got 2", cm.exception.message)

    def test_non_contiguous_tensor(self):
        x = torch.zeros(16, 4).t()  # [4, 16], strides [1, 4]
        with self.assertRaises(thunderc.Error) as cm:
            mlp(x)
        self.assertIn("expected a contiguous tensor, got strides [1, 4]", cm.exception.message)
        self.assertIn("tensor.contiguous()", str(cm.exception))
        torch.testing.assert_close(mlp(x.contiguous()), mlp(torch.zeros(4, 16)))

    def test_out_requiring_grad_is_refused(self):
        out = torch.zeros(4, 8, requires_grad=True)
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 16), out=out)
        self.assertIn("output 'output0' (#0): the output tensor requires grad", cm.exception.message)

    def test_devices_the_runtime_does_not_take(self):
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 16, device="meta"))
        self.assertEqual(cm.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("input 'x' (#0): torch tensor on device 'meta'", cm.exception.message)

    def test_sparse_tensor(self):
        with self.assertRaises(thunderc.Error) as cm:
            mlp(torch.zeros(4, 16).to_sparse())
        self.assertIn("layout torch.sparse_coo", cm.exception.message)

    def test_cuda_variants_and_host_tensors(self):
        # The runtime tests' CUDA model: CUDA variants for [2, 3] and [4, 3], and a CPU variant for [2, 3]. A
        # host tensor runs on the CPU variant where there is one, else the runtime says it needs a GPU tensor.
        with thunderc.load(support.test_model("cuda_model")) as m:
            self.assertEqual([v.device for v in m.variants], ["cuda:0", "cuda:0", "cpu"])
            self.assertEqual(m.select_variant(torch.zeros(2, 3)).id, 2)
            y, rowsum = m(torch.zeros(2, 3))
            self.assertEqual((y.device.type, tuple(y.shape), tuple(rowsum.shape)), ("cpu", (2, 3), (2,)))
            with self.assertRaises(thunderc.Error) as cm:
                m(torch.zeros(4, 3))
            self.assertEqual(cm.exception.code_name, "NO_MATCHING_VARIANT")
            # Without a CUDA driver the CUDA variants are unavailable, and the message says why instead.
            self.assertRegex(cm.exception.message,
                             r"#1 x: float32\[4, 3\] cuda:0 \((unavailable: no CUDA driver|input 'x': expected a CUDA "
                             r"tensor \(on the GPU\), got a host \(cpu\) tensor)")


if __name__ == "__main__":
    unittest.main()
