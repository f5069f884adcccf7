"""thunderc.load and thunderc.runtime: finding the runtime library, opening models, their errors, and what
a Model tells about itself (inputs, outputs, variants, manifest); close and the context manager."""
import gc
import json
import os
import subprocess
import sys
import types
import unittest

import support

import thunderc
from thunderc import _capi


class RuntimeLibraryTest(unittest.TestCase):
    def test_env_variable_names_the_library(self):
        rt = thunderc.runtime()
        self.assertEqual(rt.path, os.environ["THUNDERC_RUNTIME_LIBRARY"])
        self.assertEqual(rt.api_version, thunderc.API_VERSION)
        self.assertEqual(rt.version, thunderc.__version__)
        self.assertGreaterEqual(rt.abi_version, 1)
        self.assertIs(thunderc.runtime(), rt)  # loaded once, shared by every model

    def test_explicit_runtime_argument(self):
        rt = thunderc.runtime(str(support.runtime_library()))
        self.assertEqual(rt.api_version, thunderc.API_VERSION)
        m = thunderc.load(support.test_model("two_variants"), runtime=support.runtime_library())
        self.assertEqual(m.runtime.path, str(support.runtime_library()))
        m.close()

    def test_missing_library_names_what_was_tried(self):
        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
            thunderc.load(support.test_model("two_variants"), runtime="/nonexistent/libthunderc_runtime.so")
        e = cm.exception
        self.assertIsInstance(e, OSError)
        self.assertIsInstance(e, thunderc.Error)
        self.assertIn("/nonexistent/libthunderc_runtime.so (runtime= argument): no such file", str(e))
        self.assertIn("THUNDERC_RUNTIME_LIBRARY", str(e))

    def test_a_file_that_is_not_a_library(self):
        bad = support.tmp_dir() / "libnot_a_library.so"
        bad.write_text("not an ELF file\n")
        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
            thunderc.runtime(str(bad))
        self.assertIn(str(bad), str(cm.exception))
        self.assertIn("runtime= argument", str(cm.exception))

    def test_a_library_that_is_not_the_runtime(self):
        # A model .so is a real shared library, but it exports none of the runtime's functions.
        model = support.test_model("two_variants")
        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
            thunderc.runtime(str(model))
        self.assertIn("is not a thunderc runtime library", str(cm.exception))
        self.assertIn("thunderc_model_open", str(cm.exception))

    def test_another_api_version_is_refused(self):
        # A stand-in library object: every function present, reporting API version 2.
        fake = types.SimpleNamespace()
        for name in _capi._PROTOTYPES:
            setattr(fake, name, lambda *a: 0)
        fake.thunderc_runtime_api_version = lambda: thunderc.API_VERSION + 1
        with self.assertRaises(thunderc.RuntimeLibraryError) as cm:
            _capi.Runtime(fake, "/some/libthunderc_runtime.so")
        msg = str(cm.exception)
        self.assertIn(f"implements thunderc runtime API version {thunderc.API_VERSION + 1}", msg)
        self.assertIn(f"written for version {thunderc.API_VERSION}", msg)

    def test_without_any_hint_the_search_is_listed(self):
        # A fresh interpreter without $THUNDERC_RUNTIME_LIBRARY or a loader path to the library.
        env = {k: v for k, v in os.environ.items() if k not in ("THUNDERC_RUNTIME_LIBRARY", "LD_LIBRARY_PATH")}
        code = ("import ctypes.util, thunderc\n"
                "if ctypes.util.find_library('thunderc_runtime'): print('INSTALLED'); raise SystemExit\n"
                "try:\n    thunderc.runtime()\n"
                "except OSError as e:\n    print(type(e).__name__, e)\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        if r.stdout.startswith("INSTALLED"):
            self.skipTest("a libthunderc_runtime is installed system-wide here, so the search succeeds")
        self.assertIn("RuntimeLibraryError cannot load the thunderc runtime library", r.stdout)
        self.assertIn("(beside the package): no such file", r.stdout)
        self.assertIn("libthunderc_runtime.so (the dynamic loader's search path)", r.stdout)


class OpenErrorsTest(unittest.TestCase):
    def test_missing_model_file(self):
        path = support.tmp_dir() / "does_not_exist.so"
        with self.assertRaises(thunderc.Error) as cm:
            thunderc.load(path)
        e = cm.exception
        self.assertEqual(e.code, thunderc.StatusCode.NOT_FOUND)
        self.assertEqual(e.code_name, "NOT_FOUND")
        self.assertIn(str(path), e.message)
        self.assertTrue(str(e).startswith("NOT_FOUND: "))

    def test_not_a_model(self):
        with self.assertRaises(thunderc.Error) as cm:
            thunderc.load(support.runtime_library())  # an ELF library without thunderc_abi_version
        self.assertEqual(cm.exception.code_name, "ABI_MISMATCH")
        self.assertIn("is not a thunderc model", cm.exception.message)

    def test_manifest_that_does_not_belong(self):
        other = support.tmp_dir() / "other.json"
        other.write_text('{"format": "thunderc-manifest"}')
        with self.assertRaises(thunderc.Error) as cm:
            thunderc.load(support.test_model("two_variants"), manifest=other)
        self.assertEqual(cm.exception.code, thunderc.StatusCode.MANIFEST)
        self.assertIn("does not belong to", cm.exception.message)

    def test_bad_num_threads(self):
        with self.assertRaises(thunderc.Error) as cm:
            thunderc.load(support.test_model("two_variants"), num_threads=-1)
        self.assertEqual(cm.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("num_threads must be >= 0, got -1", cm.exception.message)

    def test_errors_pickle(self):
        import pickle
        e = thunderc.Error("msg", code=thunderc.StatusCode.IO)
        e2 = pickle.loads(pickle.dumps(e))
        self.assertEqual((e2.code, e2.code_name, e2.message, str(e2)), (e.code, "IO", "msg", "IO: msg"))


class IntrospectionTest(unittest.TestCase):
    def test_fixed_model(self):
        so = support.compile_pt2("mlp")
        with thunderc.load(so, num_threads=1) as m:
            self.assertEqual(m.path, str(so))
            self.assertEqual(m.num_threads, 1)
            # Compiled for the default x86-64-v3 alone (the variant below is available, so this CPU has it).
            self.assertEqual(m.cpu_target, "x86-64-v3")
            self.assertEqual(m.inputs, (thunderc.TensorInfo("x", "float32"),))
            self.assertEqual([(t.name, t.dtype) for t in m.outputs], [("output0", "float32")])
            self.assertEqual(len(m.variants), 1)
            v = m.variants[0]
            self.assertEqual((v.id, v.entry, v.device, v.available), (0, "thunderc_variant_0", "cpu", True))
            self.assertEqual(v.signature, "x: float32[4, 16] cpu")
            self.assertEqual(v.inputs, (thunderc.TensorSpec("x", "float32", "cpu", (4, 16)),))
            self.assertEqual(v.outputs[0].shape, (4, 8))
            self.assertEqual(v.dims, {})
            # The manifest: parsed, and byte for byte the OUT.json written beside OUT.so.
            self.assertEqual(m.manifest["format"], "thunderc-manifest")
            self.assertEqual(m.manifest["source"]["frontend"], "pt2")
            self.assertEqual(m.manifest_text, so.with_suffix(".json").read_text())
            self.assertEqual(m.manifest, json.loads(so.with_suffix(".json").read_text()))
            self.assertEqual(repr(m), f"<thunderc.Model {str(so)!r}: (x: float32) -> (output0: float32), 1 variant>")

    def test_symbolic_model(self):
        so = support.compile_pt2("dynamic_batch", "--executors", "cpp,blas")
        with thunderc.load(so) as m:
            (v,) = m.variants
            self.assertEqual(v.dims, {"s77": (1, 16)})
            self.assertEqual(v.inputs[0].shape, ("s77", 12))
            self.assertEqual(v.outputs[0].shape, ("s77", 6))
            self.assertIn("(s77 in 1..16)", v.signature)
            self.assertEqual(m.manifest["options"]["cache"], "symbolic values")

    def test_two_variants_two_outputs(self):
        with thunderc.load(support.test_model("two_variants")) as m:
            self.assertEqual([t.name for t in m.outputs], ["y", "rowsum"])
            self.assertEqual([v.inputs[0].shape for v in m.variants], [(2, 3), (4, 3)])
            self.assertEqual([[o.shape for o in v.outputs] for v in m.variants], [[(2, 3), (2,)], [(4, 3), (4,)]])
            self.assertEqual([v.workspace_bytes for v in m.variants], [0, 4096])

    def test_profile(self):
        # Without --profile: nothing timed.
        with thunderc.load(support.test_model("two_variants")) as m:
            self.assertEqual(m.profile(), ())
        # With it: one entry per operation, counting each call (docs/runtime.md, "Per-operation profile").
        so = support.compile_pt2("cnn", "--profile")
        with thunderc.load(so, num_threads=1) as m:
            self.assertIs(m.manifest["options"]["profile"], True)
            before = m.profile()
            self.assertGreaterEqual(len(before), 5)
            self.assertTrue(all(isinstance(p, thunderc.OperationProfile) and p.calls == 0 for p in before))
            x = support.load_npy("cnn.input.npy")
            for _ in range(3):
                m.run(x)
            after = m.profile(m.variants[0])  # finite inputs run variant 0, the bounded one
            self.assertEqual([p.label for p in after], [p.label for p in before])
            self.assertTrue(all(p.calls == 3 for p in after), after)
            self.assertGreater(sum(p.total_ns for p in after), 0)
            self.assertIn(" = ", after[0].label)

    def test_affine_output_dimensions_read_as_text(self):
        from thunderc._model import _affine
        self.assertEqual(_affine({"const": 0, "B": 1}), "B")
        self.assertEqual(_affine({"const": 1, "B": 2}), "2*B + 1")
        self.assertEqual(_affine({"const": -3, "B": -1, "T": 1}), "-B + T - 3")
        self.assertEqual(_affine({"const": 5}), "5")


class LifetimeTest(unittest.TestCase):
    def test_close_twice_and_call_after_close(self):
        import numpy as np
        m = thunderc.load(support.test_model("two_variants"))
        self.assertFalse(m.closed)
        m.close()
        m.close()
        self.assertTrue(m.closed)
        self.assertIn("closed", repr(m))
        with self.assertRaises(thunderc.Error) as cm:
            m(np.zeros((2, 3), np.float32))
        self.assertEqual(cm.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("is closed", cm.exception.message)
        # What was read at open stays readable.
        self.assertEqual(len(m.variants), 2)

    def test_context_manager_closes(self):
        with thunderc.load(support.test_model("two_variants")) as m:
            self.assertFalse(m.closed)
        self.assertTrue(m.closed)

    def test_garbage_collected_model_is_closed(self):
        m = thunderc.load(support.test_model("two_variants"))
        finalizer = m._finalizer
        self.assertTrue(finalizer.alive)
        del m
        gc.collect()
        self.assertFalse(finalizer.alive)


if __name__ == "__main__":
    unittest.main()
