"""ctypes declarations of libthunderc_runtime's C API (runtime/include/thunderc/runtime.h) and how the
library is found and loaded."""
import ctypes
import ctypes.util
import os
import sysconfig
import threading
from pathlib import Path

from ._errors import Error, RuntimeLibraryError

# THUNDERC_RUNTIME_API_VERSION this package was written against. The structs below mirror that header.
API_VERSION = 1

LIBRARY_NAME = "libthunderc_runtime.so"
LIBRARY_ENV = "THUNDERC_RUNTIME_LIBRARY"

# DLDeviceType values (dlpack.h).
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3

c_int64_p = ctypes.POINTER(ctypes.c_int64)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", c_int64_p),
        ("strides", c_int64_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class OpenOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("manifest_path", ctypes.c_char_p),
        ("num_threads", ctypes.c_int32),
    ]


class OperationProfileC(ctypes.Structure):
    """thunderc_operation_profile (models compiled with thunderc --profile)."""

    _fields_ = [("label", ctypes.c_char_p), ("calls", ctypes.c_uint64), ("total_ns", ctypes.c_uint64)]


class RunOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("cuda_stream", ctypes.c_void_p)]


class OptimizerOptions(ctypes.Structure):
    """thunderc_optimizer_options (the optimizer section of runtime.h)."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("lr", ctypes.c_double),
        ("weight_decay", ctypes.c_double),
        ("momentum", ctypes.c_double),
        ("dampening", ctypes.c_double),
        ("nesterov", ctypes.c_int32),
        ("beta1", ctypes.c_double),
        ("beta2", ctypes.c_double),
        ("eps", ctypes.c_double),
    ]


class TensorSpecC(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", DLDataType),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("shape", c_int64_p),
    ]


class VariantInfoC(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_size_t),
        ("entry", ctypes.c_char_p),
        ("signature", ctypes.c_char_p),
        ("device", DLDevice),
        ("available", ctypes.c_int32),
        ("workspace_bytes", ctypes.c_size_t),
        ("num_inputs", ctypes.c_size_t),
        ("num_outputs", ctypes.c_size_t),
    ]


_status = ctypes.c_void_p  # thunderc_status: NULL (None here) is success
_model = ctypes.c_void_p
_size = ctypes.c_size_t
_DLTensor_p = ctypes.POINTER(DLTensor)

# name: (restype, argtypes)
_PROTOTYPES = {
    "thunderc_status_code": (ctypes.c_int, [_status]),
    "thunderc_status_message": (ctypes.c_char_p, [_status]),
    "thunderc_status_code_name": (ctypes.c_char_p, [ctypes.c_int]),
    "thunderc_status_free": (None, [_status]),
    "thunderc_runtime_api_version": (ctypes.c_uint32, []),
    "thunderc_runtime_abi_version": (ctypes.c_uint32, []),
    "thunderc_runtime_version": (ctypes.c_char_p, []),
    "thunderc_open_options_init": (None, [ctypes.POINTER(OpenOptions)]),
    "thunderc_model_open": (_status, [ctypes.c_char_p, ctypes.POINTER(OpenOptions), ctypes.POINTER(_model)]),
    "thunderc_model_close": (None, [_model]),
    "thunderc_model_path": (ctypes.c_char_p, [_model]),
    "thunderc_model_manifest": (ctypes.c_void_p, [_model, ctypes.POINTER(_size)]),
    "thunderc_model_num_threads": (ctypes.c_int32, [_model]),
    "thunderc_model_cpu_target": (ctypes.c_char_p, [_model]),
    "thunderc_model_num_inputs": (_size, [_model]),
    "thunderc_model_num_outputs": (_size, [_model]),
    "thunderc_model_input_name": (ctypes.c_char_p, [_model, _size]),
    "thunderc_model_output_name": (ctypes.c_char_p, [_model, _size]),
    "thunderc_model_input_dtype": (DLDataType, [_model, _size]),
    "thunderc_model_output_dtype": (DLDataType, [_model, _size]),
    "thunderc_model_num_variants": (_size, [_model]),
    "thunderc_model_variant_info": (_status, [_model, _size, ctypes.POINTER(VariantInfoC)]),
    "thunderc_model_variant_input": (_status, [_model, _size, _size, ctypes.POINTER(TensorSpecC)]),
    "thunderc_model_variant_output": (_status, [_model, _size, _size, ctypes.POINTER(TensorSpecC)]),
    "thunderc_model_select_variant": (_status, [_model, _DLTensor_p, _size, ctypes.POINTER(_size)]),
    "thunderc_model_output_shape": (
        _status, [_model, _DLTensor_p, _size, _size, c_int64_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32)]),
    "thunderc_run_options_init": (None, [ctypes.POINTER(RunOptions)]),
    "thunderc_model_run_with_options": (
        _status, [_model, _DLTensor_p, _size, _DLTensor_p, _size, ctypes.POINTER(RunOptions)]),
    "thunderc_model_prepare_device": (_status, [_model, DLDevice, ctypes.POINTER(ctypes.c_char_p)]),
    "thunderc_dtype_name": (ctypes.c_char_p, [DLDataType]),
}

_context = ctypes.c_void_p  # thunderc_train_context

# The training section of runtime.h (models compiled with thunderc --autograd) came after API version 1's
# first release, the dropout RNG calls later still (ABI 6), the optimizer section (--optimizer) after those,
# then the --profile counters, so they are optional: a runtime without them still runs inference models (it
# cannot open a training model either), and the training calls then say that the runtime is too old
# (Runtime.function).
_OPTIONAL_PROTOTYPES = {
    "thunderc_model_is_training": (ctypes.c_int32, [_model]),
    "thunderc_model_num_parameters": (_size, [_model]),
    "thunderc_model_parameter_name": (ctypes.c_char_p, [_model, _size]),
    "thunderc_model_parameter_is_trainable": (ctypes.c_int32, [_model, _size]),
    "thunderc_model_parameter": (_status, [_model, _size, _DLTensor_p]),
    "thunderc_model_num_gradients": (_size, [_model]),
    "thunderc_model_gradient_name": (ctypes.c_char_p, [_model, _size]),
    "thunderc_model_gradient_is_parameter": (ctypes.c_int32, [_model, _size]),
    "thunderc_model_gradient_dtype": (DLDataType, [_model, _size]),
    "thunderc_model_forward_train": (
        _status, [_model, _DLTensor_p, _size, _DLTensor_p, _size, ctypes.POINTER(_context)]),
    "thunderc_model_gradient_shape": (
        _status, [_model, _context, _size, c_int64_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32)]),
    "thunderc_model_backward": (_status, [_model, _context, _DLTensor_p, _size, _DLTensor_p, _size]),
    "thunderc_train_context_free": (None, [_context]),
    "thunderc_model_forward_train_seeded": (
        _status, [_model, _DLTensor_p, _size, _DLTensor_p, _size, ctypes.c_uint64, ctypes.c_uint64,
                  ctypes.POINTER(_context)]),
    "thunderc_model_rng_blocks": (ctypes.c_uint64, [_model, _size]),
    "thunderc_model_set_rng_state": (_status, [_model, ctypes.c_uint64, ctypes.c_uint64]),
    "thunderc_model_rng_state": (
        _status, [_model, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]),
    "thunderc_model_optimizer": (ctypes.c_char_p, [_model]),
    "thunderc_model_optimizer_options_init": (_status, [_model, ctypes.POINTER(OptimizerOptions)]),
    "thunderc_model_optimizer_step": (_status, [_model, _DLTensor_p, _size, ctypes.POINTER(OptimizerOptions)]),
    "thunderc_model_optimizer_steps": (ctypes.c_uint64, [_model]),
    "thunderc_model_set_optimizer_steps": (_status, [_model, ctypes.c_uint64]),
    # --profile's counters came after the optimizer section.
    "thunderc_model_num_profiled_operations": (_size, [_model, _size]),
    "thunderc_model_operation_profile": (_status, [_model, _size, _size, ctypes.POINTER(OperationProfileC)]),
    "thunderc_model_optimizer_state": (_status, [_model, _size, _size, _DLTensor_p]),
}


class Runtime:
    """One loaded libthunderc_runtime.so with its functions declared. Shared by every model opened
    through it; the library stays loaded for the life of the process."""

    def __init__(self, lib, path):
        self.lib = lib
        self.path = path
        missing = [name for name in _PROTOTYPES if not hasattr(lib, name)]
        if missing:
            raise RuntimeLibraryError(
                f"{path} is not a thunderc runtime library (or too old): it does not export {', '.join(missing)}")
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        self.missing = set()  # optional functions this library lacks
        for name, (restype, argtypes) in _OPTIONAL_PROTOTYPES.items():
            if not hasattr(lib, name):
                self.missing.add(name)
                continue
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        self.api_version = lib.thunderc_runtime_api_version()
        if self.api_version != API_VERSION:
            raise RuntimeLibraryError(
                f"{path} implements thunderc runtime API version {self.api_version}, but this thunderc Python "
                f"package was written for version {API_VERSION}; install the package and the runtime from the "
                "same thunderc release")
        self.abi_version = lib.thunderc_runtime_abi_version()
        self.version = lib.thunderc_runtime_version().decode()

    def has(self, name):
        """Whether the library exports the optional function `name` (_OPTIONAL_PROTOTYPES)."""
        return name not in self.missing

    def function(self, name):
        """The optional function `name`; RuntimeLibraryError when this (older) library lacks it."""
        if name in self.missing:
            raise RuntimeLibraryError(
                f"{self.path} (thunderc runtime {self.version}) does not export {name}: it is older than this "
                "thunderc Python package; install the package and the runtime from the same thunderc release")
        return getattr(self.lib, name)

    def check(self, status, hint=None):
        """Raises the Error a non-NULL status stands for (and frees it); does nothing for NULL. hint: a
        function of (code, message) giving advice to add to the error, or None."""
        if not status:
            return
        lib = self.lib
        try:
            code = lib.thunderc_status_code(status)
            name = (lib.thunderc_status_code_name(code) or b"UNKNOWN").decode()
            message = (lib.thunderc_status_message(status) or b"").decode("utf-8", "replace")
        finally:
            lib.thunderc_status_free(status)
        raise Error(message, code=code, code_name=name, hint=hint(code, message) if hint else None)

    def dtype_name(self, dtype):
        name = self.lib.thunderc_dtype_name(dtype)
        if name:
            return name.decode()
        return f"dtype(code={dtype.code}, bits={dtype.bits}, lanes={dtype.lanes})"

    def __repr__(self):
        return f"<thunderc.Runtime {self.version} (API {self.api_version}, ABI {self.abi_version}) at {self.path}>"


_loaded = {}  # the path or name a Runtime was loaded from -> Runtime
_loaded_lock = threading.Lock()


def _candidates(runtime):
    """(where the candidate comes from, path or bare library name), in the order they are tried."""
    if runtime is not None:
        # Asked for explicitly: only that one, so that a typo never silently loads another runtime.
        return [("runtime= argument", os.fspath(runtime))]
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return [(f"${LIBRARY_ENV}", env)]
    here = Path(__file__).resolve().parent
    found = [("beside the package", str(here / LIBRARY_NAME))]
    # An installed layout: <prefix>/<libdir>/python3.X/site-packages/thunderc (or .../python3/dist-packages)
    # with the runtime in <prefix>/<libdir>, which `cmake --install` makes lib, lib64 or lib/<multiarch>.
    if len(here.parents) > 3 and here.parents[1].name.startswith("python"):
        prefix = here.parents[3]
        dirs = [here.parents[2], prefix / "lib", prefix / "lib64"]
        multiarch = sysconfig.get_config_var("MULTIARCH")
        if multiarch:
            dirs.append(prefix / "lib" / multiarch)
        for d in dict.fromkeys(dirs):
            found.append(("the installation prefix", str(d / LIBRARY_NAME)))
    name = ctypes.util.find_library("thunderc_runtime")
    if name:
        found.append(("ctypes.util.find_library", name))
    found.append(("the dynamic loader's search path", LIBRARY_NAME))
    return found


def load_runtime(runtime=None):
    """The Runtime for `runtime` (a path to libthunderc_runtime.so), else $THUNDERC_RUNTIME_LIBRARY, else
    the first library found beside the package, in the installation prefix, or by the dynamic loader."""
    tried = []
    with _loaded_lock:
        for origin, where in _candidates(runtime):
            if where in _loaded:
                return _loaded[where]
            if "/" in where and not os.path.exists(where):
                tried.append(f"{where} ({origin}): no such file")
                continue
            try:
                lib = ctypes.CDLL(where)
            except OSError as e:
                tried.append(f"{where} ({origin}): {e}")
                continue
            rt = Runtime(lib, where)
            _loaded[where] = rt
            return rt
    raise RuntimeLibraryError(
        f"cannot load the thunderc runtime library ({LIBRARY_NAME}); tried: " + "; ".join(tried) +
        f". Pass thunderc.load(..., runtime='/path/to/{LIBRARY_NAME}') or set ${LIBRARY_ENV}")
