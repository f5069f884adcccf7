"""Training models (thunderc --autograd) from Python: parameters as live zero-copy arrays, forward_train and
backward against `thunderc grad` (itself tested against LibTorch autograd), an SGD step through the parameter
arrays, dropout's RNG (seeded calls, the generator), batch norm's buffers, lifetimes, and errors with the
runtime's messages. Needs a build with LibTorch: the models are the TorchScript samples (samples/*.pt)."""
import gc
import math
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

import support

import thunderc

MLP_PARAMETERS = (("fc1.weight", (128, 64)), ("fc1.bias", (128,)), ("norm.weight", (128,)), ("norm.bias", (128,)),
                  ("fc2.weight", (10, 128)), ("fc2.bias", (10,)))
# Gradients from Python against those `thunderc grad` writes from the same .so, inputs and grad outputs: the
# same kernels at the same thread count, so equal in practice; this bound leaves room for nothing more.
GRAD_RTOL = 1e-6


def mlp_train_so():
    return support.compile_sample("mlp.pt", "--autograd", "--requires-grad", "x")


def gpt_dropout_so():
    # gpt_block has three dropouts (p = 0.1): attention weights [1, 4, 16, 16] and two [1, 16, 64] residuals.
    return support.compile_sample("gpt_block.pt", "--autograd", "--module-mode", "train")


def open_model(so):
    # One kernel thread here and in `thunderc grad` (THUNDERC_NUM_THREADS=1 in grad_cli): the same reductions.
    return thunderc.load(so, num_threads=1)


def grad_cli(so, inputs, grad_outputs, *extra):
    """Runs `thunderc grad` and returns (outputs, {gradient name: array}) as it wrote them."""
    folder = Path(tempfile.mkdtemp(prefix="grad", dir=support.tmp_dir()))
    files = []
    for i, a in enumerate(inputs):
        files.append(str(folder / f"in{i}.npy"))
        np.save(files[-1], a)
    cmd = [str(support.thunderc_bin()), "grad", str(so), *files]
    for i, g in enumerate(grad_outputs):
        np.save(folder / f"gy{i}.npy", g)
        cmd += ["--grad-output", str(folder / f"gy{i}.npy")]
    cmd += ["--output-dir", str(folder / "out"), *extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, THUNDERC_NUM_THREADS="1"))
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}")
    out = folder / "out"
    outputs = []
    while (out / f"output{len(outputs)}.npy").exists():
        outputs.append(np.load(out / f"output{len(outputs)}.npy"))
    grads = {f.name[len("grad_"):-len(".npy")]: np.load(f) for f in out.glob("grad_*.npy")}
    return outputs, grads


def assert_close_to_cli(test, ours, ref, what):
    test.assertEqual((ours.dtype, ours.shape), (ref.dtype, ref.shape), what)
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(ours, ref, rtol=GRAD_RTOL, atol=GRAD_RTOL * scale, err_msg=what)


def mlp_numpy(x, p):
    """samples/mlp.pt in float64: fc2(gelu(layer_norm(fc1(x)))), GELU with erf, LayerNorm eps 1e-5."""
    h = x.astype(np.float64) @ p["fc1.weight"].T.astype(np.float64) + p["fc1.bias"]
    mean = h.mean(-1, keepdims=True)
    var = ((h - mean) ** 2).mean(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + 1e-5) * p["norm.weight"] + p["norm.bias"]
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    return h @ p["fc2.weight"].T.astype(np.float64) + p["fc2.bias"]


def mlp_gy(y):
    return np.random.default_rng(7).standard_normal(y.shape).astype(np.float32)


class IntrospectionTest(unittest.TestCase):
    def test_parameters_and_gradients_of_the_mlp(self):
        with open_model(mlp_train_so()) as m:
            self.assertTrue(m.is_training)
            self.assertEqual(tuple((p.name, p.shape) for p in m.parameters), MLP_PARAMETERS)
            self.assertTrue(all(p.trainable and p.dtype == "float32" for p in m.parameters))
            self.assertEqual(tuple(p.name for p in m.parameters),
                             tuple(p["name"] for p in m.manifest["training"]["parameters"]))
            # One gradient per parameter and one for x (--requires-grad x), as the manifest lists them.
            self.assertEqual(sorted(g.name for g in m.gradients), sorted([n for n, _ in MLP_PARAMETERS] + ["x"]))
            self.assertEqual([g.name for g in m.gradients], [g["name"] for g in m.manifest["training"]["gradients"]])
            for g in m.gradients:
                self.assertEqual(g.is_parameter, g.name != "x", g)
                self.assertEqual(g.dtype, "float32")
            self.assertEqual(m.rng_blocks(0), 0)  # no dropout
            self.assertEqual(m.rng_blocks(m.variants[0]), 0)
            for i, (name, shape) in enumerate(MLP_PARAMETERS):
                a = m.parameter(name)
                self.assertIsInstance(a, np.ndarray)
                self.assertEqual((a.dtype, a.shape), (np.float32, shape))
                self.assertTrue(a.flags.writeable and a.flags.c_contiguous)
                self.assertEqual(a.ctypes.data % 64, 0)  # the runtime's 64-byte aligned buffer, not a copy
                self.assertTrue(np.shares_memory(a, m.parameter(i)))
            self.assertTrue(np.shares_memory(m.parameter(-1), m.parameter("fc2.bias")))
        self.assertEqual(len(m.parameters), 6)  # still readable after close

    def test_the_initial_parameters_are_the_modules(self):
        # The numpy recomputation from the parameter arrays gives PyTorch's recorded output.
        with open_model(mlp_train_so()) as m:
            x = np.load(support.samples() / "mlp.input.npy")
            p = {name: m.parameter(name) for name, _ in MLP_PARAMETERS}
            np.testing.assert_allclose(mlp_numpy(x, p), np.load(support.samples() / "mlp.expected.npy"),
                                       rtol=1e-4, atol=1e-5)

    def test_inference_model_has_no_training_state(self):
        with thunderc.load(support.compile_pt2("mlp")) as m:
            self.assertFalse(m.is_training)
            self.assertEqual((m.parameters, m.gradients, m.rng_blocks(0)), ((), (), 0))


class GradientsTest(unittest.TestCase):
    def test_forward_train_and_backward_equal_thunderc_grad(self):
        so = mlp_train_so()
        x = np.load(support.samples() / "mlp.input.npy")
        with open_model(so) as m:
            step = m.forward_train(x)
            (y,), ctx = step
            self.assertIs(step.context, ctx)
            self.assertIsInstance(ctx, thunderc.TrainContext)
            gy = mlp_gy(y)
            grads = m.backward(ctx, gy)
            self.assertEqual(len(grads), len(m.gradients))
            cli_outputs, cli_grads = grad_cli(so, [x], [gy])
            self.assertEqual(len(cli_outputs), 1)
            assert_close_to_cli(self, y, cli_outputs[0], "output0")
            self.assertEqual(sorted(cli_grads), sorted(g.name for g in m.gradients))
            for info, g in zip(m.gradients, grads):
                self.assertIsInstance(g, np.ndarray)
                assert_close_to_cli(self, g, cli_grads[info.name], info.name)
                self.assertGreater(np.abs(g).max(), 0, info.name)
            ctx.close()

    def test_the_context_is_reusable_and_out_buffers_are_written(self):
        x = np.load(support.samples() / "mlp.input.npy")
        with open_model(mlp_train_so()) as m:
            (y,), ctx = m.forward_train(x)
            gy = mlp_gy(y)
            g1 = m.backward(ctx, gy)
            # backward is linear in the grad outputs, and scaling by 2 is exact in floating point.
            g2 = m.backward(ctx, [2 * gy])
            for a, b in zip(g1, g2):
                np.testing.assert_array_equal(b, 2 * a)
            bufs = [np.full(g.shape, np.nan, g.dtype) for g in g1]
            res = m.backward(ctx, gy, out=bufs)
            for r, b, g in zip(res, bufs, g1):
                self.assertIs(r, b)
                np.testing.assert_array_equal(b, g)
            # forward_train with out=, and run() (the training forward, no context) agree with it.
            yo = np.empty_like(y)
            (r,), ctx2 = m.forward_train(x, out=yo)
            self.assertIs(r, yo)
            np.testing.assert_array_equal(yo, y)
            np.testing.assert_array_equal(m(x), y)
            ctx2.close()

    def test_torch_tensors_in_torch_gradients_out(self):
        torch = support.import_torch()
        x = np.load(support.samples() / "mlp.input.npy")
        with open_model(mlp_train_so()) as m:
            (y,), ctx = m.forward_train(x)
            gy = mlp_gy(y)
            want = m.backward(ctx, gy)
            (yt,), ctxt = m.forward_train(torch.from_numpy(x))
            self.assertIsInstance(yt, torch.Tensor)
            np.testing.assert_array_equal(yt.numpy(), y)
            grads = m.backward(ctxt, torch.from_numpy(gy))
            for g, w in zip(grads, want):
                self.assertIsInstance(g, torch.Tensor)
                np.testing.assert_array_equal(g.numpy(), w)
            # And LibTorch's own autograd on the TorchScript module with the same parameters and grad output.
            module = torch.jit.load(str(support.samples() / "mlp.pt"))
            named = dict(module.named_parameters())
            xt = torch.from_numpy(x.copy()).requires_grad_()
            module(xt).backward(torch.from_numpy(gy))
            for info, g in zip(m.gradients, grads):
                ref = xt.grad if info.name == "x" else named[info.name].grad
                np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5, err_msg=info.name)


class ParameterUpdateTest(unittest.TestCase):
    def test_sgd_step_through_the_parameter_arrays(self):
        x = np.load(support.samples() / "mlp.input.npy")
        with open_model(mlp_train_so()) as m:
            params = {name: m.parameter(name) for name, _ in MLP_PARAMETERS}
            (y0,), ctx = m.forward_train(x)
            np.testing.assert_allclose(y0, mlp_numpy(x, params), rtol=1e-5, atol=1e-5)
            # loss = sum(y^2) / 2, so d(loss)/dy = y.
            grads = m.backward(ctx, y0)
            ctx.close()
            before = {k: v.copy() for k, v in params.items()}
            lr = 0.005
            for info, g in zip(m.gradients, grads):
                if info.is_parameter:
                    params[info.name] -= lr * g  # in place: the model's own memory
            for name, _ in MLP_PARAMETERS:
                fresh = m.parameter(name)  # a new view of the same buffer sees the update
                self.assertFalse(np.array_equal(fresh, before[name]), name)
                np.testing.assert_array_equal(fresh, params[name])
            (y1,), ctx = m.forward_train(x)
            ctx.close()
            np.testing.assert_allclose(y1, mlp_numpy(x, params), rtol=1e-5, atol=1e-5)
            self.assertGreater(np.abs(y1 - y0).max(), 1e-3)
            self.assertLess(float((y1.astype(np.float64) ** 2).sum()), float((y0.astype(np.float64) ** 2).sum()))
            np.testing.assert_array_equal(m(x), y1)
            # An exact check: with fc2's weight zeroed, every output is fc2's bias.
            params["fc2.weight"][...] = 0
            params["fc2.bias"][...] = np.arange(10, dtype=np.float32) - 4.5
            np.testing.assert_array_equal(m(x), (np.arange(10, dtype=np.float32) - 4.5)[None, :])

    def test_two_models_from_one_so_have_their_own_parameters(self):
        so = mlp_train_so()
        with open_model(so) as a, open_model(so) as b:
            a.parameter("fc2.bias")[...] += 1
            x = np.load(support.samples() / "mlp.input.npy")
            np.testing.assert_allclose(a(x), b(x) + 1, rtol=1e-6, atol=1e-6)


class DropoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.so = gpt_dropout_so()
        cls.x = np.load(support.samples() / "gpt_block.input.npy")

    def test_rng_blocks(self):
        with open_model(self.so) as m:
            self.assertEqual(m.rng_blocks(0), 3 * 16 * 64 // 4)
            self.assertEqual(m.rng_blocks(0), m.manifest["variants"][0]["training"]["rng_blocks"])
            self.assertEqual(m.rng_blocks(1), 0)  # no such variant

    def test_seeded_calls_are_reproducible_and_leave_the_generator_alone(self):
        with open_model(self.so) as m:
            self.assertEqual(m.rng_state(), (0, 0))
            (a,), ca = m.forward_train_seeded(self.x, seed=5, offset=100)
            (b,), cb = m.forward_train_seeded(self.x, seed=5, offset=100)
            np.testing.assert_array_equal(a, b)
            self.assertEqual(m.rng_state(), thunderc.RngState(0, 0))
            for seed, offset in ((6, 100), (5, 101), (5, 100 + m.rng_blocks(0))):
                (c,), cc = m.forward_train_seeded(self.x, seed=seed, offset=offset)
                self.assertFalse(np.array_equal(a, c), (seed, offset))
                cc.close()
            # Not eval mode: the recorded (eval) output differs.
            self.assertGreater(np.abs(a - np.load(support.samples() / "gpt_block.expected.npy")).max(), 1e-2)
            gy = np.ones_like(a)
            ga, gb = m.backward(ca, gy), m.backward(cb, gy)
            for u, v in zip(ga, gb):
                np.testing.assert_array_equal(u, v)

    def test_the_generator_advances_by_rng_blocks(self):
        with open_model(self.so) as m:
            blocks = m.rng_blocks(0)
            m.set_rng_state(5, 100)
            self.assertEqual(m.rng_state(), (5, 100))
            (y1,), c1 = m.forward_train(self.x)
            self.assertEqual(m.rng_state(), (5, 100 + blocks))
            (y2,), c2 = m.forward_train(self.x)
            self.assertEqual(m.rng_state(), (5, 100 + 2 * blocks))
            y3 = m(self.x)  # run() draws from the generator too
            self.assertEqual(m.rng_state(), (5, 100 + 3 * blocks))
            for offset, y in ((100, y1), (100 + blocks, y2), (100 + 2 * blocks, y3)):
                (s,), cs = m.forward_train_seeded(self.x, seed=5, offset=offset)
                np.testing.assert_array_equal(s, y, err_msg=str(offset))
                cs.close()
            self.assertFalse(np.array_equal(y1, y2))
            m.set_rng_state(2**64 - 1, 2**64 - 1)
            self.assertEqual(m.rng_state(), (2**64 - 1, 2**64 - 1))
            c1.close()
            c2.close()

    def test_seeded_gradients_equal_thunderc_grad_at_that_state(self):
        with open_model(self.so) as m:
            (y,), ctx = m.forward_train_seeded(self.x, seed=3, offset=768)
            gy = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)
            grads = m.backward(ctx, gy)
            outputs, cli = grad_cli(self.so, [self.x], [gy], "--seed", "3", "--offset", "768")
            assert_close_to_cli(self, y, outputs[0], "output0")
            self.assertEqual(sorted(cli), sorted(g.name for g in m.gradients))
            for info, g in zip(m.gradients, grads):
                assert_close_to_cli(self, g, cli[info.name], info.name)
            # Another state: other masks, other gradients.
            other = m.backward(m.forward_train_seeded(self.x, seed=4, offset=768).context, gy)
            k = [g.name for g in m.gradients].index("attn.qkv.weight")
            self.assertFalse(np.array_equal(other[k], grads[k]))


class BuffersTest(unittest.TestCase):
    def test_batch_norm_running_statistics_are_buffers_the_forward_updates(self):
        so = support.compile_sample("cnn.pt", "--autograd", "--module-mode", "train")
        x = np.load(support.samples() / "cnn.input.npy")
        with open_model(so) as m:
            buffers = [p for p in m.parameters if not p.trainable]
            self.assertTrue(buffers)
            self.assertTrue(all("running_" in p.name for p in buffers), buffers)
            grad_names = {g.name for g in m.gradients}
            self.assertFalse(grad_names & {p.name for p in buffers})
            self.assertEqual(grad_names, {p.name for p in m.parameters if p.trainable})
            live = {p.name: m.parameter(p.name) for p in buffers}
            before = {k: v.copy() for k, v in live.items()}
            (y,), ctx = m.forward_train(x)
            ctx.close()
            for name, a in live.items():  # updated in place, in the arrays' memory
                self.assertFalse(np.array_equal(a, before[name]), name)


class LifetimeTest(unittest.TestCase):
    def test_parameter_arrays_keep_the_model_memory_until_they_are_gone(self):
        m = open_model(mlp_train_so())
        finalizer = m._finalizer
        w = m.parameter("fc1.weight")
        want = w.copy()
        part = w[3:5]
        del w
        m.close()
        self.assertTrue(m.closed)
        self.assertTrue(finalizer.alive)  # the runtime's model stays open for the arrays over it
        with self.assertRaises(thunderc.Error) as cm:
            m.parameter("fc1.weight")
        self.assertIn("is closed", cm.exception.message)
        np.testing.assert_array_equal(part, want[3:5])
        part[...] = 1  # still the model's memory, still writable
        del part
        gc.collect()
        self.assertFalse(finalizer.alive)

    def test_close_without_arrays_closes_at_once(self):
        m = open_model(mlp_train_so())
        finalizer = m._finalizer
        m.close()
        self.assertFalse(finalizer.alive)

    def test_contexts(self):
        x = np.load(support.samples() / "mlp.input.npy")
        m = open_model(mlp_train_so())
        (y,), ctx = m.forward_train(x)
        with ctx:
            self.assertFalse(ctx.closed)
        self.assertTrue(ctx.closed)
        ctx.close()  # twice is fine
        with self.assertRaises(thunderc.Error) as cm:
            m.backward(ctx, y)
        self.assertEqual(cm.exception.code, thunderc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("training context", cm.exception.message)
        self.assertIn("is closed", cm.exception.message)
        # A context outlives its model (thunderc_train_context_free after close is allowed) ...
        (y,), late = m.forward_train(x)
        m.close()
        free = late._finalizer
        self.assertTrue(free.alive)
        with self.assertRaises(thunderc.Error) as cm:
            m.backward(late, y)
        self.assertIn("is closed", cm.exception.message)
        # ... and is freed when garbage-collected.
        del late
        gc.collect()
        self.assertFalse(free.alive)


class ErrorsTest(support.ErrorAssertions, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = open_model(mlp_train_so())
        cls.x = np.load(support.samples() / "mlp.input.npy")

    @classmethod
    def tearDownClass(cls):
        cls.m.close()


    def test_inference_model(self):
        with thunderc.load(support.compile_pt2("mlp")) as inf:
            x = np.load(support.samples() / "pt2" / "mlp.input.npy")
            why = "was compiled without --autograd"
            for fn, args, kwargs in ((inf.forward_train, (x,), {}),
                                     (inf.forward_train_seeded, (x,), {"seed": 1}),
                                     (inf.parameter, (0,), {}),
                                     (inf.parameter, ("fc1.weight",), {}),
                                     (inf.rng_state, (), {}),
                                     (inf.set_rng_state, (1, 2), {})):
                with self.subTest(fn=fn.__name__):
                    self.assertError("INVALID_ARGUMENT", [why], fn, *args, **kwargs)
            (y,), ctx = self.m.forward_train(self.x)
            self.assertError("INVALID_ARGUMENT", [why, "thunderc_model_gradient_shape"], inf.backward, ctx, y)
            ctx.close()

    def test_wrong_input_shape(self):
        self.assertError("NO_MATCHING_VARIANT", ["expected shape [1, 64], got [3, 64]"],
                         self.m.forward_train, np.zeros((3, 64), np.float32))
        self.assertError("INVALID_ARGUMENT", ["takes 1 input(s) (x), got 2"], self.m.forward_train, self.x, self.x)

    def test_wrong_grad_outputs(self):
        (y,), ctx = self.m.forward_train(self.x)
        with ctx:
            self.assertError("INVALID_ARGUMENT", ["grad_output for output 'output0' (#0)", "[1, 10]"],
                             self.m.backward, ctx, np.zeros((2, 10), np.float32))
            self.assertError("INVALID_ARGUMENT", ["grad_output for output 'output0' (#0)", "float32"],
                             self.m.backward, ctx, np.zeros((1, 10), np.float64))
            self.assertError("INVALID_ARGUMENT", ["has 1 output(s), got 2 grad_outputs"], self.m.backward, ctx, [y, y])
            good = self.m.backward(ctx, y)
            bad = list(good)
            bad[0] = np.empty((1, 1), np.float32)
            g0 = self.m.gradients[0]
            label = f"gradient of {'parameter' if g0.is_parameter else 'input'} '{g0.name}' (#0)"
            self.assertError("INVALID_ARGUMENT", [label], self.m.backward, ctx, y, out=bad)
            self.assertError("INVALID_ARGUMENT", ["gradient(s), got 1 gradient buffers"],
                             self.m.backward, ctx, y, out=good[0])
            self.assertError("INVALID_ARGUMENT", ["expected a thunderc.TrainContext"], self.m.backward, object(), y)

    def test_context_from_another_model(self):
        with open_model(mlp_train_so()) as other:
            (y,), ctx = other.forward_train(self.x)
            with ctx:
                e = self.assertError("INVALID_ARGUMENT", ["the training context belongs to another model"],
                                     self.m.backward, ctx, y)
                self.assertTrue(e.message.startswith("thunderc_model_gradient_shape: "), e.message)
                good = other.backward(ctx, y)
                self.assertError("INVALID_ARGUMENT",
                                 ["thunderc_model_backward: the training context belongs to another model"],
                                 self.m.backward, ctx, y, out=[np.empty_like(g) for g in good])

    def test_a_runtime_without_the_training_calls(self):
        # An older libthunderc_runtime (API 1 before the training section): inference works, training calls
        # say what is missing. A stand-in library exporting only the required functions.
        import types
        from thunderc import _capi
        fake = types.SimpleNamespace(**{name: (lambda *a: 0) for name in _capi._PROTOTYPES})
        fake.thunderc_runtime_api_version = lambda: thunderc.API_VERSION
        fake.thunderc_runtime_version = lambda: b"0.0.9"
        rt = _capi.Runtime(fake, "/old/libthunderc_runtime.so")
        self.assertFalse(rt.has("thunderc_model_backward"))
        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
            rt.function("thunderc_model_forward_train_seeded")
        self.assertIn("/old/libthunderc_runtime.so (thunderc runtime 0.0.9) does not export "
                      "thunderc_model_forward_train_seeded", str(cm.exception))
        real = thunderc.runtime()
        self.assertEqual(real.missing, set())

    def test_package_side_argument_errors(self):
        self.assertError("INVALID_ARGUMENT", ["no parameter named 'fc3.weight'", "fc1.weight"],
                         self.m.parameter, "fc3.weight")
        self.assertError("INVALID_ARGUMENT", ["parameter 6 out of range"], self.m.parameter, 6)
        self.assertError("INVALID_ARGUMENT", ["seed: -1 is not in 0 .. 2**64 - 1"], self.m.set_rng_state, -1)
        self.assertError("INVALID_ARGUMENT", ["offset: expected an int, got float"],
                         self.m.forward_train_seeded, self.x, seed=1, offset=0.5)


if __name__ == "__main__":
    unittest.main()
