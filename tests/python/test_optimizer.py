"""The optimizer calls (models compiled with thunderc --autograd --optimizer sgd|adamw) from Python: K steps of
Model.optimizer_step on the gradients backward returned against a NumPy reimplementation of torch.optim's
SGD/AdamW arithmetic in float32 applied to the same gradients (and against torch.optim itself on torch tensors),
the live state arrays (optimizer_state) against the reimplementation's buffers, per-call hyperparameters and
defaults, optimizer_steps (bias correction, resuming), and errors with the runtime's messages. Needs a build
with LibTorch: the model is the TorchScript sample samples/mlp.pt."""
import gc
import inspect
import math
import unittest
from pathlib import Path

import numpy as np

import support

import thunderc

# The compiled update against the reimplementation: the same float32 operations in the same order, up to FMA
# contraction in the compiled loop and accumulation over the steps.
RTOL = 1e-5
ATOL = 1e-6
STEPS = 4
f32 = np.float32


def adamw_so():
    return support.compile_sample("mlp.pt", "--autograd", "--optimizer", "adamw")


def sgd_so():
    # --requires-grad x: backward returns x's gradient too, which optimizer_step is given and does not read.
    return support.compile_sample("mlp.pt", "--autograd", "--optimizer", "sgd", "--requires-grad", "x")


def plain_so():
    # test_training's mlp model (the same arguments, so the same compiled file under $THUNDERC_TEST_TMP).
    return support.compile_sample("mlp.pt", "--autograd", "--requires-grad", "x")


def open_model(so):
    return thunderc.load(so, num_threads=1)


def the_input():
    return np.load(support.samples() / "mlp.input.npy")


def gradients_of(m, x):
    """forward_train + backward with loss = sum(y^2) / 2 (d(loss)/dy = y): the gradients, as backward returns them."""
    (y,), ctx = m.forward_train(x)
    with ctx:
        return m.backward(ctx, y)


def adamw_reference(p, g, exp_avg, exp_avg_sq, t, lr, weight_decay, betas, eps):
    """torch.optim.AdamW's single-tensor step in float32 (hyperparameters computed in double, then float32, as
    LibTorch scales a float32 tensor by a double). Returns the new (p, exp_avg, exp_avg_sq)."""
    b1, b2 = betas
    p = p * f32(1 - lr * weight_decay)
    exp_avg = exp_avg * f32(b1) + f32(1 - b1) * g
    exp_avg_sq = exp_avg_sq * f32(b2) + (f32(1 - b2) * g) * g
    p = p + (f32(-(lr / (1 - b1 ** t))) * exp_avg) / (np.sqrt(exp_avg_sq) / f32(math.sqrt(1 - b2 ** t)) + f32(eps))
    return p, exp_avg, exp_avg_sq


def sgd_reference(p, g, buf, t, lr, weight_decay, momentum, dampening, nesterov):
    """torch.optim.SGD's single-tensor step in float32. Returns the new (p, momentum_buffer)."""
    d = g + f32(weight_decay) * p if weight_decay != 0 else g
    buf = d if t == 1 or momentum == 0 else buf * f32(momentum) + f32(1 - dampening) * d
    d = d + f32(momentum) * buf if nesterov else buf
    return p + f32(-lr) * d, buf


def assert_close(test, actual, want, what):
    test.assertEqual((actual.dtype, actual.shape), (want.dtype, want.shape), what)
    np.testing.assert_allclose(actual, want, rtol=RTOL, atol=ATOL, err_msg=what)


def trainable(m):
    return [p.name for p in m.parameters if p.trainable]


def parameter_gradients(m, grads):
    """{parameter name: its gradient} from what backward returned."""
    return {info.name: g for info, g in zip(m.gradients, grads) if info.is_parameter}


class IntrospectionTest(unittest.TestCase):
    def test_optimizer_kinds_slots_and_defaults(self):
        torch = support.import_torch()
        with open_model(adamw_so()) as a, open_model(sgd_so()) as s, open_model(plain_so()) as p:
            self.assertEqual((a.optimizer, a.optimizer_slots), ("adamw", ("exp_avg", "exp_avg_sq")))
            self.assertEqual((s.optimizer, s.optimizer_slots), ("sgd", ("momentum_buffer",)))
            self.assertEqual((p.optimizer, p.optimizer_slots), (None, ()))
            self.assertEqual(a.optimizer_slots, tuple(a.manifest["training"]["optimizer"]["state"]))
            for m in (a, s, p):
                self.assertEqual(m.optimizer_steps, 0)
            # torch.optim's defaults (torch 1.13's signatures; SGD's lr has none there, 1e-3 from torch 2.2 on).
            adamw = {k: v.default for k, v in inspect.signature(torch.optim.AdamW).parameters.items()}
            self.assertEqual(a.optimizer_defaults(),
                             thunderc.OptimizerOptions(lr=adamw["lr"], weight_decay=adamw["weight_decay"], momentum=0.0,
                                                       dampening=0.0, nesterov=False, betas=adamw["betas"],
                                                       eps=adamw["eps"]))
            sgd = {k: v.default for k, v in inspect.signature(torch.optim.SGD).parameters.items()}
            d = s.optimizer_defaults()
            self.assertEqual((d.lr, d.weight_decay, d.momentum, d.dampening, d.nesterov),
                             (1e-3, sgd["weight_decay"], sgd["momentum"], sgd["dampening"], sgd["nesterov"]))
        self.assertEqual(a.optimizer, "adamw")  # read at open: still readable after close

    def test_state_arrays_are_live_zero_copy_views(self):
        with open_model(adamw_so()) as m:
            for name in trainable(m):
                w = m.parameter(name)
                for slot, slot_name in enumerate(m.optimizer_slots):
                    s = m.optimizer_state(name, slot)
                    self.assertIsInstance(s, np.ndarray)
                    self.assertEqual((s.dtype, s.shape), (w.dtype, w.shape))
                    self.assertTrue(s.flags.writeable and s.flags.c_contiguous)
                    self.assertEqual(s.ctypes.data % 64, 0)  # the runtime's buffer, not a copy
                    np.testing.assert_array_equal(s, 0)  # zero at open
                    self.assertTrue(np.shares_memory(s, m.optimizer_state(name, slot_name)))
                    index = [p.name for p in m.parameters].index(name)
                    self.assertTrue(np.shares_memory(s, m.optimizer_state(index, slot)))
                    self.assertFalse(np.shares_memory(s, w))
                self.assertFalse(np.shares_memory(m.optimizer_state(name, 0), m.optimizer_state(name, 1)))
            self.assertTrue(np.shares_memory(m.optimizer_state(-1, "exp_avg"), m.optimizer_state("fc2.bias", 0)))


class AdamWTest(unittest.TestCase):
    def test_steps_equal_numpy_adamw_with_a_schedule(self):
        x = the_input()
        betas, eps, weight_decay = (0.8, 0.99), 1e-6, 0.05
        with open_model(adamw_so()) as m:
            names = trainable(m)
            p = {n: m.parameter(n).copy() for n in names}
            initial = {n: v.copy() for n, v in p.items()}
            exp_avg = {n: np.zeros_like(v) for n, v in p.items()}
            exp_avg_sq = {n: np.zeros_like(v) for n, v in p.items()}
            live_avg = {n: m.optimizer_state(n, "exp_avg") for n in names}  # taken before the steps
            live_sq = {n: m.optimizer_state(n, "exp_avg_sq") for n in names}
            for t in range(1, STEPS + 1):
                lr = 0.01 / t  # per call: a schedule
                grads = gradients_of(m, x)
                m.optimizer_step(grads, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps)
                self.assertEqual(m.optimizer_steps, t)
                for n, g in parameter_gradients(m, grads).items():
                    p[n], exp_avg[n], exp_avg_sq[n] = adamw_reference(p[n], g, exp_avg[n], exp_avg_sq[n], t, lr,
                                                                      weight_decay, betas, eps)
                for n in names:
                    assert_close(self, m.parameter(n), p[n], f"step {t}: {n}")
                    assert_close(self, live_avg[n], exp_avg[n], f"step {t}: exp_avg of {n}")
                    assert_close(self, live_sq[n], exp_avg_sq[n], f"step {t}: exp_avg_sq of {n}")
            # Adam moves every weight by about lr per step: far more than the tolerance.
            self.assertGreater(np.abs(m.parameter("fc1.weight") - initial["fc1.weight"]).min(), 1e-3)

    def test_defaults(self):
        x = the_input()
        with open_model(adamw_so()) as m:
            d = m.optimizer_defaults()
            p = {n: m.parameter(n).copy() for n in trainable(m)}
            grads = gradients_of(m, x)
            m.optimizer_step(grads)
            for n, g in parameter_gradients(m, grads).items():
                want, _, _ = adamw_reference(p[n], g, 0 * g, 0 * g, 1, d.lr, d.weight_decay, d.betas, d.eps)
                assert_close(self, m.parameter(n), want, n)

    def test_torch_tensors_against_torch_optim(self):
        torch = support.import_torch()
        x = torch.from_numpy(the_input())
        hp = dict(lr=0.02, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.1)
        with open_model(adamw_so()) as m:
            names = trainable(m)
            ref = {n: torch.nn.Parameter(torch.from_numpy(m.parameter(n).copy())) for n in names}
            opt = torch.optim.AdamW(list(ref.values()), **hp)
            for t in range(1, STEPS + 1):
                (y,), ctx = m.forward_train(x)
                self.assertIsInstance(y, torch.Tensor)
                with ctx:
                    grads = m.backward(ctx, y)
                self.assertTrue(all(isinstance(g, torch.Tensor) for g in grads))
                m.optimizer_step(grads, **hp)
                for n, g in parameter_gradients(m, grads).items():
                    ref[n].grad = g.clone()
                opt.step()
                for n in names:
                    what = f"step {t}: {n}"
                    assert_close(self, m.parameter(n), ref[n].detach().numpy(), what)
                    state = opt.state[ref[n]]
                    assert_close(self, m.optimizer_state(n, 0), state["exp_avg"].numpy(), "exp_avg " + what)
                    assert_close(self, m.optimizer_state(n, 1), state["exp_avg_sq"].numpy(), "exp_avg_sq " + what)

    def test_optimizer_steps_drive_bias_correction_and_resume_a_run(self):
        x = the_input()
        so = adamw_so()
        with open_model(so) as a, open_model(so) as b, open_model(so) as c:
            for _ in range(2):
                a.optimizer_step(gradients_of(a, x), lr=0.01)
            # b resumes a's run: its parameters, its state and its step count; c forgets the count.
            for m in (b, c):
                for n in trainable(a):
                    m.parameter(n)[...] = a.parameter(n)
                    for slot in a.optimizer_slots:
                        m.optimizer_state(n, slot)[...] = a.optimizer_state(n, slot)
            b.optimizer_steps = 2
            self.assertEqual((b.optimizer_steps, c.optimizer_steps), (2, 0))
            grads = gradients_of(a, x)
            for m in (a, b, c):
                m.optimizer_step(grads, lr=0.01)
            self.assertEqual((a.optimizer_steps, b.optimizer_steps, c.optimizer_steps), (3, 3, 1))
            for n in trainable(a):
                np.testing.assert_array_equal(b.parameter(n), a.parameter(n), err_msg=n)
                for slot in a.optimizer_slots:
                    np.testing.assert_array_equal(b.optimizer_state(n, slot), a.optimizer_state(n, slot), err_msg=n)
            # c's step 1 corrects the (resumed) averages by 1 - beta^1 instead of 1 - beta^3: other parameters.
            self.assertGreater(np.abs(c.parameter("fc1.weight") - a.parameter("fc1.weight")).max(), 1e-3)
            b.optimizer_steps = 2**64 - 1
            self.assertEqual(b.optimizer_steps, 2**64 - 1)
            b.optimizer_steps = 0
            self.assertEqual(b.optimizer_steps, 0)

    def test_writes_into_the_state_are_what_the_next_step_reads(self):
        x = the_input()
        with open_model(adamw_so()) as m:
            grads = gradients_of(m, x)
            n = "fc2.weight"
            p = m.parameter(n).copy()
            m.optimizer_state(n, "exp_avg")[...] = 0.5
            m.optimizer_state(n, "exp_avg_sq")[...] = 0.25
            m.optimizer_steps = 9
            m.optimizer_step(grads, lr=0.01, weight_decay=0.0)
            g = parameter_gradients(m, grads)[n]
            want, avg, sq = adamw_reference(p, g, np.full_like(p, 0.5), np.full_like(p, 0.25), 10, 0.01, 0.0,
                                            (0.9, 0.999), 1e-8)
            assert_close(self, m.parameter(n), want, n)
            assert_close(self, m.optimizer_state(n, 0), avg, "exp_avg")
            assert_close(self, m.optimizer_state(n, 1), sq, "exp_avg_sq")


class SGDTest(unittest.TestCase):
    def run_against_numpy(self, schedule):
        """STEPS steps with the hyperparameters schedule(t) gives, compared with sgd_reference after each."""
        x = the_input()
        with open_model(sgd_so()) as m:
            names = trainable(m)
            self.assertEqual(len(m.gradients), len(names) + 1)  # and x's
            p = {n: m.parameter(n).copy() for n in names}
            initial = {n: v.copy() for n, v in p.items()}
            buf = {n: None for n in names}
            live = {n: m.optimizer_state(n, "momentum_buffer") for n in names}
            for t in range(1, STEPS + 1):
                hp = schedule(t)
                grads = gradients_of(m, x)
                m.optimizer_step(grads, **hp)
                self.assertEqual(m.optimizer_steps, t)
                for n, g in parameter_gradients(m, grads).items():
                    p[n], buf[n] = sgd_reference(p[n], g, buf[n], t, hp["lr"], hp["weight_decay"], hp["momentum"],
                                                 hp["dampening"], hp["nesterov"])
                for n in names:
                    assert_close(self, m.parameter(n), p[n], f"step {t}: {n}")
                    assert_close(self, live[n], buf[n], f"step {t}: momentum_buffer of {n}")
            self.assertGreater(np.abs(m.parameter("fc2.weight") - initial["fc2.weight"]).max(), 1e-3)

    def test_momentum_dampening_weight_decay(self):
        # Dampening: the first step starts the buffer at d itself, later ones add (1 - dampening) * d.
        self.run_against_numpy(lambda t: dict(lr=0.02 * 0.5 ** (t - 1), weight_decay=0.01, momentum=0.9,
                                              dampening=0.3, nesterov=False))

    def test_nesterov(self):
        self.run_against_numpy(lambda t: dict(lr=0.01, weight_decay=1e-3, momentum=0.8, dampening=0.0, nesterov=True))

    def test_defaults_are_plain_sgd(self):
        x = the_input()
        with open_model(sgd_so()) as m:
            d = m.optimizer_defaults()
            p = {n: m.parameter(n).copy() for n in trainable(m)}
            grads = gradients_of(m, x)
            m.optimizer_step(grads)
            for n, g in parameter_gradients(m, grads).items():
                assert_close(self, m.parameter(n), p[n] + f32(-d.lr) * g, n)

    def test_input_gradients_are_not_read(self):
        # x's gradient, as backward returned it, or None, or garbage of its shape: the same step.
        x = the_input()
        so = sgd_so()
        with open_model(so) as a, open_model(so) as b, open_model(so) as c:
            grads = gradients_of(a, x)
            k = next(i for i, info in enumerate(a.gradients) if not info.is_parameter)
            self.assertEqual(a.gradients[k].name, "x")
            with_none = list(grads)
            with_none[k] = None
            with_nan = list(grads)
            with_nan[k] = np.full_like(grads[k], np.nan)
            hp = dict(lr=0.05, momentum=0.5)
            a.optimizer_step(grads, **hp)
            b.optimizer_step(tuple(with_none), **hp)
            c.optimizer_step(with_nan, **hp)
            for n in trainable(a):
                np.testing.assert_array_equal(b.parameter(n), a.parameter(n), err_msg=n)
                np.testing.assert_array_equal(c.parameter(n), a.parameter(n), err_msg=n)
                self.assertFalse(np.isnan(a.parameter(n)).any(), n)

    def test_torch_tensors_against_torch_optim_nesterov(self):
        torch = support.import_torch()
        x = torch.from_numpy(the_input())
        hp = dict(lr=0.03, momentum=0.9, dampening=0.0, weight_decay=0.02, nesterov=True)
        with open_model(sgd_so()) as m:
            names = trainable(m)
            ref = {n: torch.nn.Parameter(torch.from_numpy(m.parameter(n).copy())) for n in names}
            opt = torch.optim.SGD(list(ref.values()), **hp)
            for t in range(1, STEPS + 1):
                (y,), ctx = m.forward_train(x)
                with ctx:
                    grads = m.backward(ctx, y)
                m.optimizer_step(grads, **hp)
                for n, g in parameter_gradients(m, grads).items():
                    ref[n].grad = g.clone()
                opt.step()
                for n in names:
                    what = f"step {t}: {n}"
                    assert_close(self, m.parameter(n), ref[n].detach().numpy(), what)
                    assert_close(self, m.optimizer_state(n, "momentum_buffer"),
                                 opt.state[ref[n]]["momentum_buffer"].numpy(), "momentum_buffer " + what)


class LifetimeTest(unittest.TestCase):
    def test_state_arrays_keep_the_model_memory_until_they_are_gone(self):
        m = open_model(adamw_so())
        finalizer = m._finalizer
        m.optimizer_step(gradients_of(m, the_input()), lr=0.01)
        s = m.optimizer_state("fc1.bias", "exp_avg_sq")
        want = s.copy()
        self.assertGreater(float(want.max()), 0)
        m.close()
        self.assertTrue(finalizer.alive)
        np.testing.assert_array_equal(s, want)
        with self.assertRaises(thunderc.Error) as cm:
            m.optimizer_step((), lr=0.01)
        self.assertIn("is closed", cm.exception.message)
        with self.assertRaises(thunderc.Error) as cm:
            m.optimizer_steps
        self.assertIn("is closed", cm.exception.message)
        del s
        gc.collect()
        self.assertFalse(finalizer.alive)


class ErrorsTest(support.ErrorAssertions, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.adamw = open_model(adamw_so())
        cls.sgd = open_model(sgd_so())
        cls.x = the_input()
        cls.adamw_grads = gradients_of(cls.adamw, cls.x)
        cls.sgd_grads = gradients_of(cls.sgd, cls.x)

    @classmethod
    def tearDownClass(cls):
        cls.adamw.close()
        cls.sgd.close()


    def assertRefusedStep(self, m, grads, fragments, **hp):
        """optimizer_step(grads, **hp) raises the runtime's INVALID_ARGUMENT and changes nothing."""
        before = {n: m.parameter(n).copy() for n in trainable(m)}
        state = {(n, s): m.optimizer_state(n, s).copy() for n in trainable(m) for s in m.optimizer_slots}
        steps = m.optimizer_steps
        e = self.assertError("INVALID_ARGUMENT", fragments, m.optimizer_step, grads, **hp)
        self.assertEqual(m.optimizer_steps, steps)
        for n, v in before.items():
            np.testing.assert_array_equal(m.parameter(n), v, err_msg=n)
        for (n, s), v in state.items():
            np.testing.assert_array_equal(m.optimizer_state(n, s), v, err_msg=f"{s} of {n}")
        return e

    def test_options_torch_optim_refuses(self):
        step = "thunderc_model_optimizer_step: "
        for m, grads in ((self.adamw, self.adamw_grads), (self.sgd, self.sgd_grads)):
            with self.subTest(m.optimizer):
                e = self.assertRefusedStep(m, grads, [step + "invalid learning rate", "lr must be finite and >= 0"],
                                           lr=-0.1)
                self.assertTrue(e.message.startswith(step), e.message)
                self.assertRefusedStep(m, grads, [step + "invalid weight_decay"], weight_decay=-1e-3)
                self.assertRefusedStep(m, grads, [step + "invalid learning rate"], lr=float("nan"))
        self.assertRefusedStep(self.sgd, self.sgd_grads,
                               [step + "nesterov momentum requires a momentum > 0 and zero dampening"], nesterov=True)
        self.assertRefusedStep(self.sgd, self.sgd_grads, ["nesterov momentum requires"], nesterov=True, momentum=0.9,
                               dampening=0.1)
        self.assertRefusedStep(self.sgd, self.sgd_grads, [step + "invalid momentum"], momentum=-0.5)
        self.assertRefusedStep(self.sgd, self.sgd_grads, [step + "nesterov must be 0 or 1, got 2"], nesterov=2,
                               momentum=0.9)
        self.assertRefusedStep(self.adamw, self.adamw_grads, [step + "invalid beta2 1.000000"], betas=(0.9, 1.0))
        self.assertRefusedStep(self.adamw, self.adamw_grads, [step + "invalid beta1 -0.100000"], betas=(-0.1, 0.9))
        self.assertRefusedStep(self.adamw, self.adamw_grads, [step + "invalid eps"], eps=-1e-8)

    def test_gradients_the_runtime_refuses(self):
        m, grads = self.adamw, self.adamw_grads
        self.assertRefusedStep(m, grads[:2], [f"{Path(adamw_so()).name} has 6 gradient(s), got 2"])
        self.assertRefusedStep(m, grads[0], ["has 6 gradient(s), got 1"])
        wrong = list(grads)
        wrong[0] = grads[1]  # fc1.bias's gradient for fc1.weight's
        self.assertRefusedStep(m, wrong, ["gradient of parameter 'fc1.weight' (#0)", "float32[128, 64]",
                                          "got float32[128]"])
        wrong[0] = grads[0].astype(np.float64)
        self.assertRefusedStep(m, wrong, ["gradient of parameter 'fc1.weight' (#0)", "got float64[128, 64]"])
        wrong[0] = np.asfortranarray(grads[0])  # the right shape and values, column-major
        self.assertRefusedStep(m, wrong, ["gradient of parameter 'fc1.weight' (#0)", "contiguous"])
        wrong[0] = m.parameter("fc1.weight")
        self.assertRefusedStep(m, wrong, ["the gradient of parameter 'fc1.weight' overlaps parameter 'fc1.weight'"])

    def test_package_side_argument_errors(self):
        m, grads = self.adamw, self.adamw_grads
        self.assertRefusedStep(m, grads, ["momentum is not a hyperparameter of adamw (it takes lr, weight_decay, "
                                          "betas, eps)"], momentum=0.9)
        self.assertRefusedStep(self.sgd, self.sgd_grads, ["betas is not a hyperparameter of sgd"], betas=(0.9, 0.99))
        self.assertRefusedStep(self.sgd, self.sgd_grads, ["eps is not a hyperparameter of sgd"], eps=1e-8)
        self.assertRefusedStep(m, grads, ["betas: expected a pair (beta1, beta2), got 0.9"], betas=0.9)
        self.assertRefusedStep(m, grads, ["betas: expected a pair"], betas=(0.9, 0.99, 0.999))
        self.assertRefusedStep(m, grads, ["lr: expected a number, got str"], lr="0.1")
        self.assertRefusedStep(self.sgd, self.sgd_grads, ["nesterov: expected a bool, got float"], nesterov=1.0,
                               momentum=0.9)
        none = list(grads)
        none[2] = None
        self.assertRefusedStep(m, none, ["gradient of parameter 'norm.weight' (#2) is None"])
        self.assertRefusedStep(m, [object()] + list(grads[1:]),
                               ["gradient of parameter 'fc1.weight' (#0): expected a numpy.ndarray or a torch.Tensor"])
        self.assertError("INVALID_ARGUMENT", ["optimizer_steps: -1 is not in 0 .. 2**64 - 1"],
                         setattr, m, "optimizer_steps", -1)
        self.assertError("INVALID_ARGUMENT", ["optimizer_steps: expected an int, got float"],
                         setattr, m, "optimizer_steps", 2.0)
        self.assertError("INVALID_ARGUMENT", ["has no state slot named 'momentum_buffer' (slots: exp_avg, exp_avg_sq)"],
                         m.optimizer_state, "fc1.weight", "momentum_buffer")
        self.assertError("INVALID_ARGUMENT", ["optimizer state slot -1 out of range"], m.optimizer_state, 0, -1)
        self.assertError("INVALID_ARGUMENT", ["thunderc_model_optimizer_state: slot 2 out of range (adamw keeps 2 "
                                              "per parameter)"], m.optimizer_state, 0, 2)
        self.assertError("INVALID_ARGUMENT", ["thunderc_model_optimizer_state: slot 1 out of range (sgd keeps 1"],
                         self.sgd.optimizer_state, 0, 1)
        self.assertError("INVALID_ARGUMENT", ["thunderc_model_optimizer_state: parameter 6 out of range"],
                         m.optimizer_state, 6, 0)
        self.assertError("INVALID_ARGUMENT", ["no parameter named 'fc3.weight'"], m.optimizer_state, "fc3.weight", 0)

    def test_a_model_without_an_optimizer(self):
        with open_model(plain_so()) as m:
            grads = gradients_of(m, self.x)
            why = "was compiled without --optimizer, so it has no update entry"
            self.assertIsNone(m.optimizer)
            self.assertEqual(m.optimizer_steps, 0)  # the C getter's 0
            before = m.parameter("fc1.weight").copy()
            e = self.assertError("INVALID_ARGUMENT", [why], m.optimizer_step, grads, lr=0.01)
            self.assertTrue(e.message.startswith("thunderc_model_optimizer_options_init: "), e.message)
            np.testing.assert_array_equal(m.parameter("fc1.weight"), before)
            self.assertError("INVALID_ARGUMENT", [why], m.optimizer_step, grads)
            self.assertError("INVALID_ARGUMENT", [why], m.optimizer_defaults)
            self.assertError("INVALID_ARGUMENT", ["thunderc_model_optimizer_state: ", why], m.optimizer_state, 0, 0)
            self.assertError("INVALID_ARGUMENT", [why], m.optimizer_state, "fc1.weight", "exp_avg")
            self.assertError("INVALID_ARGUMENT", ["thunderc_model_set_optimizer_steps: ", why],
                             setattr, m, "optimizer_steps", 1)

    def test_an_inference_model(self):
        with thunderc.load(support.compile_pt2("mlp")) as inf:
            why = "was compiled without --autograd"
            self.assertIsNone(inf.optimizer)
            self.assertEqual((inf.optimizer_slots, inf.optimizer_steps), ((), 0))
            self.assertError("INVALID_ARGUMENT", [why], inf.optimizer_step, self.adamw_grads, lr=0.01)
            self.assertError("INVALID_ARGUMENT", [why], inf.optimizer_state, 0, 0)
            self.assertError("INVALID_ARGUMENT", [why], inf.optimizer_defaults)

    def test_a_runtime_without_the_optimizer_calls(self):
        # An older libthunderc_runtime with the training calls but not the optimizer's: it opens the model, which
        # then has no optimizer for the package, and the optimizer calls say what the runtime lacks.
        import ctypes
        from thunderc import _capi
        path = str(support.runtime_library())
        old = _capi.Runtime(ctypes.CDLL(path), path)
        old.missing |= {name for name in _capi._OPTIONAL_PROTOTYPES if "optimizer" in name}
        key = "/old/libthunderc_runtime.so"
        _capi._loaded[key] = old
        try:
            with thunderc.load(adamw_so(), runtime=key) as m:
                self.assertIs(m.runtime, old)
                self.assertTrue(m.is_training)
                self.assertEqual((m.optimizer, m.optimizer_slots), (None, ()))
                for fn, args in ((m.optimizer_step, (self.adamw_grads,)), (m.optimizer_defaults, ()),
                                 (m.optimizer_state, (0, 0))):
                    with self.subTest(fn.__name__):
                        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
                            fn(*args)
                        self.assertIn(f"{path} (thunderc runtime {old.version}) does not export "
                                      "thunderc_model_optimizer", str(cm.exception))
                with self.assertRaises(thunderc.RuntimeLibraryError):
                    m.optimizer_steps
        finally:
            del _capi._loaded[key]
        self.assertFalse({name for name in thunderc.runtime().missing if "optimizer" in name})

    def test_a_runtime_with_another_options_struct(self):
        # A runtime whose thunderc_optimizer_options grew (struct_size 80, not 72): refused before any step.
        import ctypes
        from thunderc import _capi
        path = str(support.runtime_library())
        lib = ctypes.CDLL(path)
        other = _capi.Runtime(lib, path)
        real_init = lib.thunderc_model_optimizer_options_init

        def grown_init(handle, options):
            status = real_init(handle, options)
            options._obj.struct_size = 80
            return status
        lib.thunderc_model_optimizer_options_init = grown_init
        key = "/other/libthunderc_runtime.so"
        _capi._loaded[key] = other
        try:
            with thunderc.load(adamw_so(), runtime=key) as m:
                before = m.parameter("fc1.weight").copy()
                for fn, args in ((m.optimizer_step, (self.adamw_grads,)), (m.optimizer_defaults, ())):
                    with self.subTest(fn.__name__):
                        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
                            fn(*args)
                        self.assertIn("has a 80-byte thunderc_optimizer_options, this thunderc Python package a "
                                      "72-byte one", str(cm.exception))
                np.testing.assert_array_equal(m.parameter("fc1.weight"), before)
                self.assertEqual(m.optimizer_steps, 0)
        finally:
            del _capi._loaded[key]

if __name__ == "__main__":
    unittest.main()
