"""The package installs with pip (offline, into a venv over Debian's Python) and works from there, finding the
runtime in the installation prefix; its version is the project's."""
import os
import re
import shutil
import subprocess
import unittest

import support

import thunderc


def run(cmd, **kwargs):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, **kwargs)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}")
    return r.stdout


class VersionTest(unittest.TestCase):
    def test_package_version_is_the_project_version(self):
        cmake = (support.REPO / "CMakeLists.txt").read_text()
        project = re.search(r"project\(thunderc VERSION ([0-9.]+)", cmake).group(1)
        pyproject = (support.REPO / "python" / "pyproject.toml").read_text()
        self.assertEqual(re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1), project)
        self.assertEqual(thunderc.__version__, project)


class PipInstallTest(unittest.TestCase):
    def test_pip_install_into_a_venv_and_run_from_there(self):
        tmp = support.tmp_dir() / "install"
        # Build from a copy: pip and setuptools write build/ and *.egg-info beside the sources.
        src = tmp / "src"
        shutil.copytree(support.REPO / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        venv = tmp / "venv"
        # Over Debian's Python (PEP 668: no pip install into the system); --system-site-packages for numpy and
        # for pip, setuptools and wheel themselves, so nothing is downloaded; --without-pip skips ensurepip.
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip", str(venv)])
        py = venv / "bin" / "python"
        # --isolated: no user pip configuration (index URLs, find-links) takes part.
        run([str(py), "-m", "pip", "--isolated", "--disable-pip-version-check", "install", "--no-index",
             "--no-deps", "--no-build-isolation", str(src)])

        # The runtime as `cmake --install` into that prefix would put it: <venv>/lib.
        shutil.copy(support.runtime_library(), venv / "lib" / "libthunderc_runtime.so")
        so = support.compile_pt2("mlp")
        code = ("import sys, numpy as np, thunderc\n"
                "print(thunderc.__file__)\n"
                "print(thunderc.runtime().path)\n"
                "m = thunderc.load(sys.argv[1])\n"
                "y = m(np.load(sys.argv[2]))\n"
                f"print(np.allclose(y, np.load(sys.argv[3]), rtol={support.RTOL}, atol={support.ATOL}))\n")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "THUNDERC_RUNTIME_LIBRARY")}
        out = run([str(py), "-c", code, str(so), str(support.samples() / "pt2" / "mlp.input.npy"),
                   str(support.samples() / "pt2" / "mlp.expected.npy")], env=env, cwd=str(tmp))
        package, runtime, close = out.split()
        self.assertTrue(package.startswith(str(venv / "lib")), package)  # the installed copy, not the sources
        self.assertEqual(os.path.realpath(runtime), os.path.realpath(venv / "lib" / "libthunderc_runtime.so"))
        self.assertEqual(close, "True")

        version = run([str(py), "-m", "pip", "--isolated", "show", "thunderc"], env=env, cwd=str(tmp))
        self.assertIn(f"Version: {thunderc.__version__}", version)


if __name__ == "__main__":
    unittest.main()
