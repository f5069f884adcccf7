"""thunderc.Model: one opened OUT.so, callable on NumPy arrays and torch tensors."""
import ctypes
import json
import os
import threading
import weakref
from typing import NamedTuple, Optional, Tuple, Union

from . import _capi, _tensors
from ._capi import DLDevice, DLTensor, OpenOptions, RunOptions, TensorSpecC, VariantInfoC
from ._errors import Error, StatusCode

_MAX_NDIM = 64  # the runtime refuses more dimensions


class TensorInfo(NamedTuple):
    """A model input or output: its name and dtype name ("float32", "int64", "bool", ...)."""

    name: str
    dtype: str


class TensorSpec(NamedTuple):
    """What one variant takes or gives for one input/output. A dimension is an int, or a str for a
    symbolic one: the symbol's name for inputs ("B"), an affine expression for outputs ("2*B + 1")."""

    name: str
    dtype: str
    device: str
    shape: Tuple[Union[int, str], ...]


class Variant(NamedTuple):
    """One compiled variant (manifest `variants[id]`). `available` is False when its device (or CPU
    feature level) is missing on this machine; `dims` maps each symbol to its inclusive (min, max)."""

    id: int
    entry: str
    signature: str
    device: str
    available: bool
    workspace_bytes: int
    inputs: Tuple[TensorSpec, ...]
    outputs: Tuple[TensorSpec, ...]
    dims: dict


def device_name(device):
    if device.device_type == _capi.KDL_CPU:
        return "cpu"
    if device.device_type == _capi.KDL_CUDA:
        return f"cuda:{device.device_id}"
    return f"device({device.device_type}):{device.device_id}"


def _affine(expr):
    """A manifest output dimension {"const": c, "B": a, ...} as text: "a*B + c"."""
    terms = [(coef, sym if abs(coef) == 1 else f"{abs(coef)}*{sym}")
             for sym, coef in expr.items() if sym != "const" and coef != 0]
    const = expr.get("const", 0)
    if const or not terms:
        terms.append((const, str(abs(const))))
    text = ""
    for coef, term in terms:
        if not text:
            text = ("-" if coef < 0 else "") + term
        else:
            text += (" - " if coef < 0 else " + ") + term
    return text


def _shape(spec, manifest_shape):
    """spec's shape with each -1 (symbolic) replaced by the manifest's symbol or expression."""
    dims = []
    for d in range(spec.ndim):
        extent = spec.shape[d]
        if extent < 0 and manifest_shape is not None and d < len(manifest_shape):
            m = manifest_shape[d]
            extent = _affine(m) if isinstance(m, dict) else str(m)
        dims.append(extent)
    return tuple(dims)


class Model:
    """A compiled model (OUT.so + OUT.json) opened by libthunderc_runtime. See thunderc.load."""

    def __init__(self, path, *, num_threads: Optional[int] = None, manifest=None, runtime=None):
        self._handle = None
        self._rt = rt = _capi.load_runtime(runtime)
        lib = rt.lib
        opts = OpenOptions()
        lib.thunderc_open_options_init(ctypes.byref(opts))
        if num_threads is not None:
            opts.num_threads = num_threads  # 0: $THUNDERC_NUM_THREADS, else all cores (as the C API)
        if manifest is not None:
            opts.manifest_path = os.fsencode(manifest)  # the struct keeps the bytes alive
        handle = ctypes.c_void_p()
        rt.check(lib.thunderc_model_open(os.fsencode(path), ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle.value
        # A model dropped without close() is closed when it is garbage-collected, but not at interpreter
        # exit: the process is going away, and other libraries (torch, OpenMP) may be shut down already.
        self._finalizer = weakref.finalize(self, lib.thunderc_model_close, self._handle)
        self._finalizer.atexit = False
        self._cond = threading.Condition()
        self._active = 0  # calls in flight, which close() waits for

        h = self._handle
        self._path = os.fsdecode(lib.thunderc_model_path(h))
        self._num_threads = lib.thunderc_model_num_threads(h)
        self._cpu_target = (lib.thunderc_model_cpu_target(h) or b"").decode()
        size = ctypes.c_size_t()
        text = ctypes.string_at(lib.thunderc_model_manifest(h, ctypes.byref(size)), size.value)
        self._manifest_text = text.decode("utf-8")
        self._manifest = json.loads(self._manifest_text)
        self._input_dtypes = [lib.thunderc_model_input_dtype(h, i) for i in range(lib.thunderc_model_num_inputs(h))]
        self._output_dtypes = [lib.thunderc_model_output_dtype(h, i) for i in range(lib.thunderc_model_num_outputs(h))]
        self._inputs = tuple(TensorInfo(lib.thunderc_model_input_name(h, i).decode(), rt.dtype_name(d))
                             for i, d in enumerate(self._input_dtypes))
        self._outputs = tuple(TensorInfo(lib.thunderc_model_output_name(h, i).decode(), rt.dtype_name(d))
                              for i, d in enumerate(self._output_dtypes))
        self._variants = tuple(self._read_variant(v) for v in range(lib.thunderc_model_num_variants(h)))

    def _read_variant(self, v):
        rt, lib, h = self._rt, self._rt.lib, self._handle
        info = VariantInfoC()
        rt.check(lib.thunderc_model_variant_info(h, v, ctypes.byref(info)))
        entries = self._manifest.get("variants", [])
        mv = entries[v] if v < len(entries) else {}
        guards = mv.get("guards", [])
        output_shapes = mv.get("output_shapes", [])

        def specs(count, getter, manifest_shape):
            out = []
            for i in range(count):
                s = TensorSpecC()
                rt.check(getter(h, v, i, ctypes.byref(s)))
                out.append(TensorSpec(s.name.decode(), rt.dtype_name(s.dtype), device_name(s.device),
                                      _shape(s, manifest_shape(i))))
            return tuple(out)

        inputs = specs(info.num_inputs, lib.thunderc_model_variant_input,
                       lambda i: guards[i].get("shape") if i < len(guards) else None)
        outputs = specs(info.num_outputs, lib.thunderc_model_variant_output,
                        lambda i: output_shapes[i] if i < len(output_shapes) else None)
        dims = {name: (r.get("min"), r.get("max")) for name, r in mv.get("dims", {}).items()}
        return Variant(info.id, info.entry.decode(), info.signature.decode(), device_name(info.device),
                       bool(info.available), info.workspace_bytes, inputs, outputs, dims)

    # ---- introspection (plain data read at open; still readable after close) ----

    @property
    def path(self) -> str:
        return self._path

    @property
    def num_threads(self) -> int:
        """Threads each call's kernels may use (num_threads=, else $THUNDERC_NUM_THREADS, else all cores)."""
        return self._num_threads

    @property
    def cpu_target(self) -> str:
        """The instruction-set level whose code runs ("x86-64-v4"): the best of those compiled (--cpu-target)
        this CPU has, capped by $THUNDERC_MAX_CPU_TARGET; "" when none fits."""
        return self._cpu_target

    @property
    def inputs(self) -> Tuple[TensorInfo, ...]:
        return self._inputs

    @property
    def outputs(self) -> Tuple[TensorInfo, ...]:
        return self._outputs

    @property
    def variants(self) -> Tuple[Variant, ...]:
        return self._variants

    @property
    def manifest(self) -> dict:
        """The manifest (docs/manifest.md), parsed; the JSON text is manifest_text."""
        return self._manifest

    @property
    def manifest_text(self) -> str:
        return self._manifest_text

    @property
    def runtime(self):
        """The loaded runtime library: .path, .version, .api_version, .abi_version."""
        return self._rt

    @property
    def closed(self) -> bool:
        return self._handle is None

    # ---- running ----

    def __call__(self, *inputs, out=None):
        """Runs the model: one output, or a tuple when the model has several (see run)."""
        outs = self.run(*inputs, out=out)
        return outs[0] if len(outs) == 1 else outs

    def run(self, *inputs, out=None) -> tuple:
        """Runs the model on `inputs` (NumPy arrays or torch tensors, in the order of .inputs) and returns a
        tuple of outputs. Without `out`, outputs are new torch tensors when any input is a torch tensor (on
        the device the call ran on), else NumPy arrays. With `out` (an array, or a sequence of one per
        output), the outputs are written into those buffers, which are returned. Nothing is copied: the
        runtime reads the inputs' and writes the outputs' own memory."""
        views = [_tensors.view(x, self._what("input", self._inputs, i)) for i, x in enumerate(inputs)]
        arr = (DLTensor * len(views))(*[v.dl for v in views])
        hint = self._contiguity_hint(views)
        cuda = next((v.dl.device for v in views if v.dl.device.device_type == _capi.KDL_CUDA), None)
        rt, lib = self._rt, self._rt.lib
        handle = self._enter()
        try:
            if out is None:
                outs = self._allocate(handle, arr, len(views), views, cuda, hint)
            elif isinstance(out, (tuple, list)):
                outs = tuple(out)
            else:
                outs = (out,)
            out_views = [_tensors.view(o, self._what("output", self._outputs, i), writable=True)
                         for i, o in enumerate(outs)]
            out_arr = (DLTensor * len(out_views))(*[v.dl for v in out_views])
            opts = RunOptions()
            lib.thunderc_run_options_init(ctypes.byref(opts))
            if cuda is not None:
                # Enqueue on torch's current stream, so the call is ordered like a torch operation.
                torch = _tensors.torch_module()
                opts.cuda_stream = torch.cuda.current_stream(cuda.device_id).cuda_stream or None
            rt.check(lib.thunderc_model_run_with_options(handle, arr, len(views), out_arr, len(out_views),
                                                         ctypes.byref(opts)), hint)
        finally:
            self._leave()
        return outs

    def select_variant(self, *inputs) -> Variant:
        """The variant a call with these inputs would run (errors as a call's)."""
        views = [_tensors.view(x, self._what("input", self._inputs, i)) for i, x in enumerate(inputs)]
        arr = (DLTensor * len(views))(*[v.dl for v in views])
        handle = self._enter()
        try:
            return self._variants[self._select(handle, arr, len(views), self._contiguity_hint(views))]
        finally:
            self._leave()

    def prepare_device(self, device="cuda:0") -> str:
        """Sets up a CUDA device ahead of the first call (module image, weights upload); returns what was
        loaded, e.g. "sm_90 cubin". DEVICE_UNAVAILABLE when the model has no CUDA variant or no GPU fits."""
        text = str(device)
        kind, _, index = text.partition(":")
        if kind != "cuda" or (index and not index.isdigit()):
            raise Error(f"prepare_device: expected 'cuda' or 'cuda:N', got {text!r}", code=StatusCode.INVALID_ARGUMENT)
        image = ctypes.c_char_p()
        handle = self._enter()
        try:
            dev = DLDevice(_capi.KDL_CUDA, int(index or 0))
            self._rt.check(self._rt.lib.thunderc_model_prepare_device(handle, dev, ctypes.byref(image)))
        finally:
            self._leave()
        return image.value.decode() if image.value else ""

    def _select(self, handle, arr, n, hint):
        chosen = ctypes.c_size_t()
        self._rt.check(self._rt.lib.thunderc_model_select_variant(handle, arr, n, ctypes.byref(chosen)), hint)
        return chosen.value

    def _allocate(self, handle, arr, n, views, cuda, hint):
        rt, lib = self._rt, self._rt.lib
        # The variant's device decides where outputs live: a CUDA variant runs on its inputs' GPU.
        device = DLDevice(_capi.KDL_CPU, 0)
        if cuda is not None:
            vi = self._select(handle, arr, n, hint)
            if self._variants[vi].device.startswith("cuda"):
                device = cuda
        as_torch = any(_tensors.is_torch(v.obj) for v in views)
        shape = (ctypes.c_int64 * _MAX_NDIM)()
        ndim = ctypes.c_int32()
        outs = []
        for i, dtype in enumerate(self._output_dtypes):
            rt.check(lib.thunderc_model_output_shape(handle, arr, n, i, shape, _MAX_NDIM, ctypes.byref(ndim)), hint)
            dims = tuple(shape[:ndim.value])
            what = self._what("output", self._outputs, i)
            if as_torch:
                outs.append(_tensors.empty_torch(dims, dtype, device, what))
            else:
                outs.append(_tensors.empty_numpy(dims, dtype, what))
        return tuple(outs)

    @staticmethod
    def _what(kind, infos, i):
        return f"{kind} '{infos[i].name}' (#{i})" if i < len(infos) else f"{kind} #{i}"

    @staticmethod
    def _contiguity_hint(views):
        """Advice for errors caused by a non-contiguous input (the runtime names the input and its strides)."""
        if all(v.contiguous for v in views):
            return None

        def hint(code, message):
            if code == StatusCode.NO_MATCHING_VARIANT and "expected a contiguous tensor" in message:
                return ("compiled variants take contiguous tensors: pass numpy.ascontiguousarray(a) or "
                        "tensor.contiguous()")
            return None
        return hint

    # ---- lifetime ----

    def _enter(self):
        with self._cond:
            if self._handle is None:
                raise Error(f"model {self._path} is closed", code=StatusCode.INVALID_ARGUMENT)
            self._active += 1
            return self._handle

    def _leave(self):
        with self._cond:
            self._active -= 1
            if self._active == 0:
                self._cond.notify_all()

    def close(self):
        """Unloads the model once calls in flight on other threads have returned. Closing twice is fine;
        calling a closed model raises thunderc.Error."""
        if self._handle is None:
            return
        with self._cond:
            if self._handle is None:
                return
            self._handle = None  # new calls fail from here on
            while self._active:
                self._cond.wait()
        self._finalizer()  # thunderc_model_close, exactly once

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        def sig(infos):
            return ", ".join(f"{t.name}: {t.dtype}" for t in infos)
        n = len(self._variants)
        state = ", closed" if self.closed else ""
        return (f"<thunderc.Model {self._path!r}: ({sig(self._inputs)}) -> ({sig(self._outputs)}), "
                f"{n} variant{'s' if n != 1 else ''}{state}>")


def load(path, *, num_threads: Optional[int] = None, manifest=None, runtime=None) -> Model:
    """Opens a model compiled by thunderc.

    path: OUT.so. num_threads: threads the kernels of each call may use (None: $THUNDERC_NUM_THREADS,
    else all cores). manifest: the OUT.json to check against the copy embedded in the .so (None:
    OUT.json beside OUT.so when it exists). runtime: path of libthunderc_runtime.so (None: see
    thunderc.runtime)."""
    return Model(path, num_threads=num_threads, manifest=manifest, runtime=runtime)
