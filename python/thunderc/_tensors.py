"""DLTensor views of NumPy arrays and torch tensors (no copies), and allocation of outputs.

The view is the DLTensor the runtime reads: its data pointer is the array's own buffer. We build it from
the array's attributes rather than through __dlpack__ capsules because NumPy refuses __dlpack__ for
read-only arrays and torch for tensors that require grad, both fine to read from here."""
import ctypes
import functools
import re
import sys

from . import _capi
from ._capi import DLDataType, DLDevice, DLTensor
from ._errors import Error, StatusCode

# DLDataTypeCode values (dlpack.h) by name prefix; thunderc's bool is THUNDERC_DL_BOOL (6, DLPack >= 0.8's kDLBool).
_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "complex": 5}
_DL_BOOL = 6
_NAME_RE = re.compile(r"(u?int|b?float|complex)(\d+)$")


@functools.lru_cache(maxsize=None)
def _dl_fields(dt):
    """(code, bits, lanes) of a NumPy or torch dtype, or None. Cached: NumPy computes names slowly."""
    name = str(dt).rpartition(".")[2]  # "float32" for NumPy's, "torch.float32" for torch's
    if name == "bool":
        return (_DL_BOOL, 8, 1)
    m = _NAME_RE.match(name)
    if not m or int(m.group(2)) > 255:
        return None
    return (_CODES[m.group(1)], int(m.group(2)), 1)


def dl_dtype(dt):
    """DLDataType of a NumPy or torch dtype, or None when DLPack has none."""
    fields = _dl_fields(dt)
    return DLDataType(*fields) if fields else None


def dtype_name(dtype):
    """The inverse of dl_dtype for the types NumPy or torch have (None otherwise)."""
    if dtype.lanes != 1:
        return None
    if dtype.code == _DL_BOOL and dtype.bits == 8:
        return "bool"
    for prefix, code in _CODES.items():
        if code == dtype.code:
            return f"{prefix}{dtype.bits}"
    return None


def _describe(dtype):
    return dtype_name(dtype) or f"dtype(code={dtype.code}, bits={dtype.bits}, lanes={dtype.lanes})"


def _invalid(message, hint=None):
    return Error(message, code=StatusCode.INVALID_ARGUMENT, hint=hint)


def numpy_module():
    return sys.modules.get("numpy")


def torch_module():
    return sys.modules.get("torch")


def is_torch(x):
    torch = torch_module()  # x cannot be a tensor unless torch was imported already
    return torch is not None and isinstance(x, torch.Tensor)


def is_numpy(x):
    np = numpy_module()
    return np is not None and isinstance(x, np.ndarray)


class TensorView:
    """A DLTensor describing `obj`'s memory. Keeps obj, shape and strides alive while the DLTensor is used."""

    __slots__ = ("obj", "dl", "shape", "strides", "contiguous")

    def __init__(self, obj, data, device, dtype, shape, strides):
        self.obj = obj
        ndim = len(shape)
        self.shape = (ctypes.c_int64 * ndim)(*shape)
        self.strides = (ctypes.c_int64 * ndim)(*strides) if strides is not None else None
        self.contiguous = strides is None
        self.dl = DLTensor(data, device, ndim, dtype, self.shape, self.strides, 0)


def view(x, what, writable=False):
    """TensorView of a NumPy array or torch tensor; `what` names it in errors ("input 'x' (#0)")."""
    if is_numpy(x):
        return _numpy_view(x, what, writable)
    if is_torch(x):
        return _torch_view(x, what, writable)
    kind = type(x).__module__ + "." + type(x).__qualname__ if type(x).__module__ != "builtins" else type(x).__name__
    raise _invalid(f"{what}: expected a numpy.ndarray or a torch.Tensor, got {kind}",
                   hint="wrap numbers and lists with numpy.asarray(..., dtype=...)")


def _numpy_view(a, what, writable):
    dt = a.dtype
    if not dt.isnative:
        raise _invalid(f"{what}: numpy array with non-native byte order {dt.str}",
                       hint="convert it with a.astype(a.dtype.newbyteorder('='))")
    dtype = dl_dtype(dt)
    if dtype is None:
        raise _invalid(f"{what}: numpy dtype {dt} has no DLPack equivalent")
    if writable and not a.flags.writeable:
        raise _invalid(f"{what}: the numpy array is read-only")
    strides = None
    if not a.flags.c_contiguous:
        if any(s % dt.itemsize for s in a.strides):
            raise _invalid(f"{what}: numpy strides {a.strides} (bytes) are not multiples of the item size "
                           f"{dt.itemsize}", hint="pass numpy.ascontiguousarray(a)")
        strides = [s // dt.itemsize for s in a.strides]
    return TensorView(a, a.ctypes.data, DLDevice(_capi.KDL_CPU, 0), dtype, a.shape, strides)


def _torch_view(t, what, writable):
    torch = torch_module()
    if t.layout != torch.strided:
        raise _invalid(f"{what}: torch tensor with layout {t.layout}; thunderc takes dense (strided) tensors",
                       hint="call .to_dense()")
    if t.device.type == "cpu":
        device = DLDevice(_capi.KDL_CPU, 0)
    elif t.device.type == "cuda":
        device = DLDevice(_capi.KDL_CUDA, t.device.index if t.device.index is not None else 0)
    else:
        raise _invalid(f"{what}: torch tensor on device '{t.device}'; the thunderc runtime takes cpu and cuda tensors")
    dtype = dl_dtype(t.dtype)
    if dtype is None:
        raise _invalid(f"{what}: torch dtype {t.dtype} has no DLPack equivalent")
    if t.is_complex() and (t.is_conj() or t.is_neg()):
        raise _invalid(f"{what}: torch tensor with a lazy conjugate/negation bit (its memory does not hold its values)",
                       hint="call .resolve_conj().resolve_neg()")
    if writable and t.requires_grad:
        raise _invalid(f"{what}: the output tensor requires grad; thunderc would write it behind autograd's back",
                       hint="pass a tensor made under torch.no_grad() or .detach()ed")
    strides = None if t.is_contiguous() else list(t.stride())
    return TensorView(t, t.data_ptr(), device, dtype, tuple(t.shape), strides)


def empty_numpy(shape, dtype, what):
    np = _require_numpy()
    name = dtype_name(dtype)
    if name is None or name == "bfloat16":
        raise _invalid(f"{what} has dtype {_describe(dtype)}, which numpy has no type for",
                       hint="pass torch tensors to get torch outputs")
    return np.empty(shape, dtype=np.dtype(name))


def empty_torch(shape, dtype, device, what):
    torch = torch_module()
    name = dtype_name(dtype)
    tdtype = getattr(torch, name, None) if name else None
    if not isinstance(tdtype, torch.dtype):
        raise _invalid(f"{what} has dtype {_describe(dtype)}, which this torch has no type for")
    if device.device_type == _capi.KDL_CUDA:
        tdevice = torch.device("cuda", device.device_id)
    else:
        tdevice = torch.device("cpu")
    return torch.empty(shape, dtype=tdtype, device=tdevice)


class _ExternalMemory:
    """Memory owned by the runtime, shown to NumPy through __array_interface__: an array made from it (and
    every view of that array) keeps this object, and through it `keepalive`, alive."""

    __slots__ = ("__array_interface__", "keepalive", "__weakref__")

    def __init__(self, data, shape, typestr, keepalive):
        self.__array_interface__ = {"version": 3, "data": (data, False), "shape": tuple(shape), "typestr": typestr,
                                    "strides": None}
        self.keepalive = keepalive


class _ExternalDeviceMemory:
    """The same for CUDA memory, shown to torch through __cuda_array_interface__ (torch.as_tensor makes a tensor
    over it that holds a reference to this object until its storage is freed)."""

    __slots__ = ("__cuda_array_interface__", "keepalive", "__weakref__")

    def __init__(self, data, shape, typestr, keepalive):
        # Version 2 (no stream): the runtime's training calls return once the device has finished.
        self.__cuda_array_interface__ = {"version": 2, "data": (data, False), "shape": tuple(shape),
                                         "typestr": typestr, "strides": None}
        self.keepalive = keepalive


def numpy_over(dl, keepalive, what):
    """A writable NumPy array over a dense host DLTensor's memory (no copy), and the object that owns the
    memory on NumPy's side (array.base): it references `keepalive` for as long as any array over it lives."""
    np = _require_numpy()
    name = dtype_name(dl.dtype)
    if name is None or name == "bfloat16":
        raise _invalid(f"{what} has dtype {_describe(dl.dtype)}, which numpy has no type for")
    if dl.device.device_type != _capi.KDL_CPU:
        raise _invalid(f"{what} is not in host memory (device type {dl.device.device_type})")
    if dl.strides:
        raise _invalid(f"{what} is not a compact row-major tensor")
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    memory = _ExternalMemory(dl.data + dl.byte_offset if dl.data else 0, shape, np.dtype(name).str, keepalive)
    return np.asarray(memory), memory


def torch_over_cuda(dl, keepalive, what):
    """A torch tensor over a dense CUDA DLTensor's memory (no copy), and the object that owns the memory on
    torch's side: it references `keepalive` for as long as the tensor's storage lives."""
    torch = torch_module()
    if torch is None:
        try:
            import torch
        except ImportError as e:
            raise _invalid(f"{what} is in CUDA device memory; viewing it needs torch, which is not installed") from e
    name = dtype_name(dl.dtype)
    if name is None or name == "bfloat16" or dl.strides:
        raise _invalid(f"{what}: a {_describe(dl.dtype)} CUDA tensor{' with strides' if dl.strides else ''}, "
                       "which this package cannot view")
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    np = _require_numpy()  # for the interface's type string
    memory = _ExternalDeviceMemory(dl.data + dl.byte_offset, shape, np.dtype(name).str, keepalive)
    tensor = torch.as_tensor(memory, device=torch.device("cuda", dl.device.device_id))
    if tensor.data_ptr() != dl.data + dl.byte_offset:
        raise _invalid(f"{what}: torch copied the device memory instead of viewing it")
    return tensor, memory


def _require_numpy():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - numpy is a dependency in practice
        raise _invalid("numpy is not installed; pass torch tensors or install numpy") from e
    return numpy
