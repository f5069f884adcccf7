"""Run models compiled by thunderc (OUT.so + OUT.json) from Python.

    import thunderc
    with thunderc.load("mlp.so") as m:
        y = m(x)          # x: a numpy array or a torch tensor; y: the same kind

    with thunderc.load("mlp_train.so") as m:        # compiled with thunderc --autograd
        (y,), ctx = m.forward_train(x)
        grads = m.backward(ctx, gy)                   # in the order of m.gradients
        for info, g in zip(m.gradients, grads):
            if info.is_parameter:
                m.parameter(info.name)[...] -= 0.01 * g   # the live parameter, in place
        # or, compiled with --optimizer sgd|adamw: m.optimizer_step(grads, lr=0.01)

A thin ctypes layer over libthunderc_runtime's C API (runtime/include/thunderc/runtime.h): inputs and
outputs are passed to the runtime as DLPack tensors pointing at the arrays' own memory (no copies).
See docs/python.md.
"""
from ._capi import API_VERSION, Runtime
from ._capi import load_runtime as _load_runtime
from ._errors import Error, RuntimeLibraryError, StatusCode
from ._model import (GradientInfo, Model, OperationProfile, OptimizerOptions, ParameterInfo, RngState, TensorInfo,
                     TensorSpec, TrainContext, TrainStep, Variant, load)

__version__ = "0.1.0"  # equal to project(thunderc VERSION ...) in the top-level CMakeLists.txt

__all__ = [
    "API_VERSION", "Error", "GradientInfo", "Model", "OperationProfile", "OptimizerOptions", "ParameterInfo",
    "RngState", "Runtime", "RuntimeLibraryError", "StatusCode", "TensorInfo", "TensorSpec", "TrainContext",
    "TrainStep", "Variant", "load", "runtime", "__version__",
]


def runtime(path=None) -> Runtime:
    """The runtime library models are opened with: `path` if given, else $THUNDERC_RUNTIME_LIBRARY, else
    libthunderc_runtime.so beside this package, in the installation prefix (<prefix>/lib when the
    package is in <prefix>/lib/python3.X/site-packages), or found by the dynamic loader. Raises
    RuntimeLibraryError naming every place tried, or when the library implements another API version."""
    return _load_runtime(path)
