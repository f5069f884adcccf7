"""Shared helpers of the thunderc Python package tests (stdlib unittest; run with /usr/bin/python3).

Environment (tests/python/CMakeLists.txt sets it; set it by hand to run the tests outside ctest):
  THUNDERC                   the thunderc compiler binary (models are compiled at run time into a temp dir)
  THUNDERC_RUNTIME_LIBRARY   libthunderc_runtime.so (the package reads it too)
  PYTHONPATH                 <repo>/python, where the package lives
  THUNDERC_SAMPLES           <repo>/samples (default: found from this file)
  THUNDERC_TEST_MODELS       the runtime tests' hand-written models (two_variants.so); default:
                             <build>/tests/runtime/models beside <build>/lib/libthunderc_runtime.so
  THUNDERC_TEST_TMP          optional: a folder where compiled samples are kept for the other test processes
"""
import atexit
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Fixture tolerance: the .pt2 samples' expected outputs were computed by PyTorch; the same bound as the C++
# tests of those fixtures (tests/frontend/pt2_test.cpp).
RTOL = 1e-4
ATOL = 1e-5


def env_path(name, default=None):
    value = os.environ.get(name) or default
    if not value:
        raise AssertionError(f"${name} is not set; see tests/python/support.py for the variables these tests need")
    path = Path(value)
    if not path.exists():
        raise AssertionError(f"${name}={value} does not exist (build the project first)")
    return path


def thunderc_bin():
    return env_path("THUNDERC")


def runtime_library():
    return env_path("THUNDERC_RUNTIME_LIBRARY")


def samples():
    return env_path("THUNDERC_SAMPLES", str(REPO / "samples"))


def test_model(name):
    """A hand-written model of tests/runtime (e.g. "two_variants": y = 2x+1 and rowsum = x.sum(1) for
    float32 x of shape [2, 3] (variant 0) or [4, 3] (variant 1))."""
    default = runtime_library().resolve().parent.parent / "tests" / "runtime" / "models"
    return env_path("THUNDERC_TEST_MODELS", str(default)) / f"{name}.so"


_tmp = None


def tmp_dir():
    """One temporary directory per test process, removed at exit."""
    global _tmp
    if _tmp is None:
        _tmp = Path(tempfile.mkdtemp(prefix="thunderc-python-test-"))
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


_compiled = {}


def compile_pt2(name, *args):
    """Compiles samples/pt2/<name>.pt2 and returns OUT.so's path (see compile_sample)."""
    return compile_sample(f"pt2/{name}.pt2", *args)


def compile_sample(relpath, *args):
    """Compiles samples/<relpath> (a .pt2, or a TorchScript .pt in a build with LibTorch) and returns OUT.so's
    path. --standalone: the model links no LibTorch, so it loads next to any torch (or none) in this process,
    and the same test runs in a build without LibTorch. With $THUNDERC_TEST_TMP (ctest sets it) the result is
    shared by the test processes: it is kept under a key of the compiler binary, the sample and the
    arguments, and a lock makes one process compile while the others wait."""
    key = (relpath,) + args
    if key not in _compiled:
        sample = samples() / relpath
        name = Path(relpath).stem
        shared = os.environ.get("THUNDERC_TEST_TMP")
        if not shared:
            _compiled[key] = _compile(sample, tmp_dir() / f"{name}{len(_compiled)}.so", args)
        else:
            ident = [str(thunderc_bin().resolve()), str(sample), *args]
            for f in (thunderc_bin(), sample):
                st = f.stat()
                ident += [str(st.st_mtime_ns), str(st.st_size)]
            digest = hashlib.sha256("\0".join(ident).encode()).hexdigest()[:16]
            folder = Path(shared) / "models"
            folder.mkdir(parents=True, exist_ok=True)
            so = folder / f"{name}-{digest}.so"
            with open(folder / f"{name}-{digest}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not (so.exists() and so.with_suffix(".json").exists()):
                    _compile(sample, so, args)
            _compiled[key] = so
    return _compiled[key]


def _compile(sample, so, args):
    cmd = [str(thunderc_bin()), str(sample), "-o", str(so), "--standalone", *args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}")
    return so


def load_npy(name):
    import numpy as np
    return np.load(samples() / "pt2" / name)


def repeat_rows(a, n):
    """The 4 rows of a row-independent model's fixture, repeated to n rows (PyTorch's values at batch n)."""
    import numpy as np
    return np.ascontiguousarray(np.resize(a, (n, a.shape[1])))


def import_torch():
    """torch is a test dependency (Debian's python3-torch): its absence is a failure, not a skip."""
    try:
        import torch
    except ImportError as e:
        raise AssertionError(
            "these tests need torch: install Debian's python3-torch (bash scripts/install-deps.sh) and run them "
            f"with /usr/bin/python3 ({e})") from e
    return torch


def open_shared_models():
    """The models test_numpy and test_torch run: mlp, dynamic_batch (cpp,blas) and two_variants, opened."""
    import thunderc  # here, not at the top: test_torch imports torch first, so a missing torch is reported first

    return (thunderc.load(compile_pt2("mlp")),
            thunderc.load(compile_pt2("dynamic_batch", "--executors", "cpp,blas")),
            thunderc.load(test_model("two_variants")))


class ErrorAssertions:
    """Mixin for unittest.TestCase: assertError(code_name, fragments, fn, ...) checks that fn raises
    thunderc.Error with that status code name and every fragment in the runtime's message."""

    def assertError(self, code_name, fragments, fn, *args, **kwargs):
        import thunderc
        with self.assertRaises(thunderc.Error) as cm:
            fn(*args, **kwargs)
        e = cm.exception
        self.assertEqual(e.code_name, code_name, str(e))
        for f in fragments:
            self.assertIn(f, e.message)
        return e
