"""thunderc.Model: one opened OUT.so, callable on NumPy arrays and torch tensors."""
import ctypes
import json
import operator
import os
import threading
import weakref
from typing import NamedTuple, Optional, Tuple, Union

from . import _capi, _tensors
from ._capi import DLDevice, DLTensor, OpenOptions, OperationProfileC, RunOptions, TensorSpecC, VariantInfoC
from ._errors import Error, RuntimeLibraryError, StatusCode

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


class ParameterInfo(NamedTuple):
    """A parameter of a training model (thunderc --autograd): its state_dict name, whether it is trainable
    (it has a gradient) or a buffer (batch norm's running statistics, which the training forward updates),
    its dtype name and its shape."""

    name: str
    trainable: bool
    dtype: str
    shape: Tuple[int, ...]


class GradientInfo(NamedTuple):
    """A gradient backward writes: the parameter's or input's name, which of the two, and its dtype name."""

    name: str
    is_parameter: bool
    dtype: str


class OperationProfile(NamedTuple):
    """One operation of a model compiled with thunderc --profile: its label ("t26 = onednn.fusion(...) [...]  #
    where the model wrote it"), how many times it ran and the nanoseconds it took in all, since the model was
    opened (docs/runtime.md, "Per-operation profile")."""

    label: str
    calls: int
    total_ns: int


class RngState(NamedTuple):
    """Dropout's RNG state: the seed, and the counter block the next draw starts at."""

    seed: int
    offset: int


class OptimizerOptions(NamedTuple):
    """An optimizer step's hyperparameters (thunderc_optimizer_options), as torch.optim names them. sgd reads
    lr, weight_decay, momentum, dampening and nesterov; adamw lr, weight_decay, betas and eps."""

    lr: float
    weight_decay: float
    momentum: float
    dampening: float
    nesterov: bool
    betas: Tuple[float, float]
    eps: float


# The keyword arguments of Model.optimizer_step each optimizer reads (torch.optim.SGD's and AdamW's).
_HYPERPARAMETERS = {
    "sgd": ("lr", "weight_decay", "momentum", "dampening", "nesterov"),
    "adamw": ("lr", "weight_decay", "betas", "eps"),
}


def _real(value, what):
    if isinstance(value, (str, bytes)):
        raise Error(f"{what}: expected a number, got {type(value).__name__}", code=StatusCode.INVALID_ARGUMENT)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise Error(f"{what}: expected a number, got {type(value).__name__}",
                    code=StatusCode.INVALID_ARGUMENT) from None


class _OptionsBuffer(ctypes.Structure):
    _fields_ = [("options", _capi.OptimizerOptions), ("spare", ctypes.c_char * 256)]


class TrainStep(NamedTuple):
    """What Model.forward_train returns: the outputs (a tuple, as Model.run's) and the TrainContext that
    Model.backward takes."""

    outputs: tuple
    context: "TrainContext"


class _CallGate:
    """Calls borrow a runtime pointer (the attribute named by _gated) between _enter and _leave; _shut clears
    it, so new calls fail, and returns once the calls in flight have returned. Model and TrainContext share it."""

    _gated = ""

    def _init_gate(self):
        self._cond = threading.Condition()
        self._active = 0  # calls in flight, which _shut waits for

    def _enter(self):
        with self._cond:
            value = getattr(self, self._gated)
            if value is None:
                raise self._closed_error()
            self._active += 1
            return value

    def _leave(self):
        with self._cond:
            self._active -= 1
            if self._active == 0:
                self._cond.notify_all()

    def _shut(self) -> bool:
        """True when this call closed it (False: it was closed already)."""
        with self._cond:
            if getattr(self, self._gated) is None:
                return False
            setattr(self, self._gated, None)
            while self._active:
                self._cond.wait()
        return True


class _Handle:
    """The runtime's model handle. thunderc_model_close runs exactly once: when Model.close() asks and no
    array over a parameter is alive, else when the last reference goes (the Model's, and those of the arrays
    Model.parameter returned, which point into memory the model owns)."""

    __slots__ = ("value", "finalizer", "arrays", "__weakref__")

    def __init__(self, lib, value):
        self.value = value
        # Not at interpreter exit: the process is going away, and other libraries (torch, OpenMP) may be
        # shut down already.
        self.finalizer = weakref.finalize(self, lib.thunderc_model_close, value)
        self.finalizer.atexit = False
        self.arrays = weakref.WeakSet()  # what the live parameter arrays are made over (their .base)


def _uint64(value, what):
    try:
        v = operator.index(value)
    except TypeError:
        raise Error(f"{what}: expected an int, got {type(value).__name__}", code=StatusCode.INVALID_ARGUMENT) from None
    if not 0 <= v < 1 << 64:
        raise Error(f"{what}: {v} is not in 0 .. 2**64 - 1", code=StatusCode.INVALID_ARGUMENT)
    return v


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


class Model(_CallGate):
    """A compiled model (OUT.so + OUT.json) opened by libthunderc_runtime. See thunderc.load."""

    _gated = "_handle"

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
        # A model dropped without close() is closed when it is garbage-collected (not at interpreter exit).
        self._owner = _Handle(lib, self._handle)
        self._finalizer = self._owner.finalizer
        self._init_gate()

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
        self._read_training()

    def _read_training(self):
        rt, lib, h = self._rt, self._rt.lib, self._handle
        self._parameters = ()
        self._gradients = ()
        self._parameter_index = {}
        self._rng_blocks = ()
        self._optimizer = None
        self._optimizer_slots = ()
        # A runtime without the training calls cannot open a training model (ABI 5 and later) either.
        self._is_training = rt.has("thunderc_model_is_training") and bool(lib.thunderc_model_is_training(h))
        if not self._is_training:
            return
        # dtype and shape from the manifest: thunderc_model_parameter refuses a CUDA training model's parameters
        # until they are placed on a device (docs/runtime.md, "CUDA training models").
        listed = self._manifest.get("training", {}).get("parameters", [])
        params = []
        for i in range(lib.thunderc_model_num_parameters(h)):
            entry = listed[i] if i < len(listed) else {}
            params.append(ParameterInfo(lib.thunderc_model_parameter_name(h, i).decode(),
                                        lib.thunderc_model_parameter_is_trainable(h, i) == 1,
                                        entry.get("dtype", ""), tuple(entry.get("shape", ()))))
        self._parameters = tuple(params)
        self._parameter_index = {p.name: i for i, p in enumerate(params)}
        self._gradients = tuple(
            GradientInfo(lib.thunderc_model_gradient_name(h, i).decode(),
                         lib.thunderc_model_gradient_is_parameter(h, i) == 1,
                         rt.dtype_name(lib.thunderc_model_gradient_dtype(h, i)))
            for i in range(lib.thunderc_model_num_gradients(h)))
        if rt.has("thunderc_model_rng_blocks"):
            self._rng_blocks = tuple(lib.thunderc_model_rng_blocks(h, v) for v in range(len(self._variants)))
        kind = lib.thunderc_model_optimizer(h) if rt.has("thunderc_model_optimizer") else None
        if kind:
            self._optimizer = kind.decode()
            # The runtime validated the manifest's slots at open (sgd: momentum_buffer; adamw: exp_avg, exp_avg_sq).
            self._optimizer_slots = tuple(self._manifest.get("training", {}).get("optimizer", {}).get("state", ()))

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

    @property
    def is_training(self) -> bool:
        """True for a model compiled with thunderc --autograd (parameters, forward_train, backward)."""
        return self._is_training

    @property
    def parameters(self) -> Tuple[ParameterInfo, ...]:
        """The parameters and buffers of a training model, in the manifest's order (() for an inference
        model). parameter(name) gives the live values."""
        return self._parameters

    @property
    def optimizer(self) -> Optional[str]:
        """"sgd" or "adamw" for a model compiled with thunderc --autograd --optimizer, else None."""
        return self._optimizer

    @property
    def optimizer_slots(self) -> Tuple[str, ...]:
        """The optimizer's state per trainable parameter, by slot: ("momentum_buffer",) for sgd, ("exp_avg",
        "exp_avg_sq") for adamw (torch.optim's state names), () without an optimizer. See optimizer_state."""
        return self._optimizer_slots

    @property
    def gradients(self) -> Tuple[GradientInfo, ...]:
        """What backward returns, in its order (the manifest's training.gradients): one per trainable
        parameter and one per input compiled with --requires-grad (() for an inference model)."""
        return self._gradients

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
        lib = self._rt.lib

        def call(handle, arr, n, out_arr, k, cuda):
            opts = RunOptions()
            lib.thunderc_run_options_init(ctypes.byref(opts))
            if cuda is not None:
                # Enqueue on torch's current stream, so the call is ordered like a torch operation.
                torch = _tensors.torch_module()
                opts.cuda_stream = torch.cuda.current_stream(cuda.device_id).cuda_stream or None
            return lib.thunderc_model_run_with_options(handle, arr, n, out_arr, k, ctypes.byref(opts))
        return self._forward(inputs, out, call)

    def _forward(self, inputs, out, call):
        """run() and forward_train(): views of the inputs, the outputs (`out`, or allocated), then
        call(handle, inputs, n, outputs, k, cuda device or None) -> status, checked. Returns the outputs."""
        views = [_tensors.view(x, self._what("input", self._inputs, i)) for i, x in enumerate(inputs)]
        arr = (DLTensor * len(views))(*[v.dl for v in views])
        hint = self._contiguity_hint(views)
        cuda = next((v.dl.device for v in views if v.dl.device.device_type == _capi.KDL_CUDA), None)
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
            self._rt.check(call(handle, arr, len(views), out_arr, len(out_views), cuda), hint)
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

    # ---- training (models compiled with thunderc --autograd; docs/training.md) ----

    def parameter(self, key):
        """The live value of a parameter or buffer (a name of .parameters, or its index), not a copy: a
        writable NumPy array over the model's own memory (a CUDA training model: a torch tensor over its device
        memory, once prepare_device or a first training call has placed the parameters). Every later call reads
        it, and writing into it (an optimizer step: `p -= lr * g`) updates the model. Writes must not overlap a
        call that runs the model. The array keeps the model's memory alive: after close() it stays valid, and
        the runtime closes the model once the last such array (and every view of it) is gone."""
        index = self._parameter_key(key)
        fn = self._rt.function("thunderc_model_parameter")
        what = f"parameter '{self._parameter_name(index)}' (#{index})"
        return self._live_array(lambda handle, dl: fn(handle, index, dl), what)

    def _parameter_key(self, key):
        """The index of parameter `key` (a name of .parameters, or an index, negative from the end)."""
        if isinstance(key, str):
            index = self._parameter_index.get(key)
            if index is None and self._is_training:
                names = ", ".join(p.name for p in self._parameters)
                raise Error(f"{self._path} has no parameter named {key!r} (parameters: {names})",
                            code=StatusCode.INVALID_ARGUMENT)
            # An inference model: index 0, so that the runtime says why it has no parameters.
            return index or 0
        index = operator.index(key)
        if index < 0:
            index += len(self._parameters)
        if index < 0:
            raise Error(f"parameter index {key} out of range ({self._path} has {len(self._parameters)})",
                        code=StatusCode.INVALID_ARGUMENT)
        return index

    def _parameter_name(self, index):
        return self._parameters[index].name if index < len(self._parameters) else str(index)

    def _live_array(self, getter, what):
        """An array over memory the model owns (no copy): getter(handle, pointer to a DLTensor) -> status fills
        the view. NumPy for host memory, torch for CUDA memory; it keeps the model's memory alive (_Handle)."""
        rt = self._rt
        handle = self._enter()
        try:
            dl = DLTensor()
            rt.check(getter(handle, ctypes.byref(dl)))
            if dl.device.device_type == _capi.KDL_CUDA:
                array, memory = _tensors.torch_over_cuda(dl, self._owner, what)
            else:
                array, memory = _tensors.numpy_over(dl, self._owner, what)
            self._owner.arrays.add(memory)
        finally:
            self._leave()
        return array

    def forward_train(self, *inputs, out=None) -> TrainStep:
        """A training forward (thunderc_model_forward_train) with the live parameters: returns
        TrainStep(outputs, context), outputs a tuple as run()'s (out=: as run's), context what the forward
        saved, for backward(). Dropout draws from the model's generator (rng_state), which the call advances
        by rng_blocks; batch norm's buffers are updated."""
        return self._forward_train(inputs, out, None)

    def forward_train_seeded(self, *inputs, seed, offset=0, out=None) -> TrainStep:
        """forward_train with dropout's RNG state given (thunderc_model_forward_train_seeded): the same
        (seed, offset) gives the same masks; the model's generator is neither used nor advanced. A model
        without dropout ignores the state."""
        return self._forward_train(inputs, out, (_uint64(seed, "seed"), _uint64(offset, "offset")))

    def _forward_train(self, inputs, out, rng):
        rt = self._rt
        if rng is None:
            fn = rt.function("thunderc_model_forward_train")
        else:
            fn = rt.function("thunderc_model_forward_train_seeded")
        context = ctypes.c_void_p()
        free = rt.function("thunderc_train_context_free")

        def call(handle, arr, n, out_arr, k, cuda):
            if rng is None:
                return fn(handle, arr, n, out_arr, k, ctypes.byref(context))
            return fn(handle, arr, n, out_arr, k, rng[0], rng[1], ctypes.byref(context))
        try:
            outs = self._forward(inputs, out, call)
        except BaseException:
            free(context.value)  # NULL unless the call succeeded and something failed after it
            raise
        return TrainStep(outs, TrainContext(rt, context.value, self._path))

    def backward(self, context, grad_outputs, *, out=None) -> tuple:
        """Gradients of the loss from the forward that made `context` (thunderc_model_backward), with the
        live parameters. grad_outputs: d(loss)/d(output) for each output (one array for a one-output model,
        else a sequence), each of its output's shape and dtype. Returns a tuple in the order of .gradients:
        new torch tensors when any grad_output is a torch tensor (on its CUDA device for a CUDA training
        model), else NumPy arrays; with out= (a sequence
        of one buffer per gradient, or one buffer), written into those, which are returned. The context is
        not consumed (backward may run again from it); use it before the parameters change."""
        if not isinstance(context, TrainContext):
            raise Error(f"backward: expected a thunderc.TrainContext (from forward_train), got "
                        f"{type(context).__name__}", code=StatusCode.INVALID_ARGUMENT)
        rt = self._rt
        grads = tuple(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else (grad_outputs,)
        views = [_tensors.view(g, "grad_output for " + self._what("output", self._outputs, i))
                 for i, g in enumerate(grads)]
        arr = (DLTensor * len(views))(*[v.dl for v in views])
        fn = rt.function("thunderc_model_backward")
        handle = self._enter()
        try:
            ctx = context._enter()
            try:
                if out is None:
                    cuda = next((v.dl.device for v in views if v.dl.device.device_type == _capi.KDL_CUDA), None)
                    outs = self._allocate_gradients(handle, ctx, any(_tensors.is_torch(v.obj) for v in views), cuda)
                elif isinstance(out, (tuple, list)):
                    outs = tuple(out)
                else:
                    outs = (out,)
                out_views = [_tensors.view(o, self._gradient_what(i), writable=True) for i, o in enumerate(outs)]
                out_arr = (DLTensor * len(out_views))(*[v.dl for v in out_views])
                rt.check(fn(handle, ctx, arr, len(views), out_arr, len(out_views)))
            finally:
                context._leave()
        finally:
            self._leave()
        return outs

    def _gradient_what(self, i):
        if i >= len(self._gradients):
            return f"gradient #{i}"
        g = self._gradients[i]
        return f"gradient of {'parameter' if g.is_parameter else 'input'} '{g.name}' (#{i})"

    def _allocate_gradients(self, handle, ctx, as_torch, cuda):
        """New gradient tensors: on the grad_outputs' CUDA device (a CUDA training model) or the host."""
        rt, lib = self._rt, self._rt.lib
        shape_fn = rt.function("thunderc_model_gradient_shape")
        shape = (ctypes.c_int64 * _MAX_NDIM)()
        ndim = ctypes.c_int32()
        device = cuda if cuda is not None else DLDevice(_capi.KDL_CPU, 0)
        if not self._is_training:
            rt.check(shape_fn(handle, ctx, 0, shape, _MAX_NDIM, ctypes.byref(ndim)))  # the runtime says why not
        outs = []
        for i in range(len(self._gradients)):
            rt.check(shape_fn(handle, ctx, i, shape, _MAX_NDIM, ctypes.byref(ndim)))
            dims = tuple(shape[:ndim.value])
            dtype = lib.thunderc_model_gradient_dtype(handle, i)
            what = self._gradient_what(i)
            outs.append(_tensors.empty_torch(dims, dtype, device, what) if as_torch else
                        _tensors.empty_numpy(dims, dtype, what))
        return tuple(outs)

    def profile(self, variant=0) -> Tuple[OperationProfile, ...]:
        """Each operation of `variant` (an id or a Variant) with its calls and nanoseconds so far, in trace order;
        empty for a model compiled without --profile. Counters only grow: subtract two reads to time some calls."""
        vid = variant.id if isinstance(variant, Variant) else operator.index(variant)
        rt = self._rt
        if not rt.has("thunderc_model_num_profiled_operations"):
            return ()
        out = []
        handle = self._enter()
        try:
            for i in range(rt.lib.thunderc_model_num_profiled_operations(handle, vid)):
                op = OperationProfileC()
                rt.check(rt.lib.thunderc_model_operation_profile(handle, vid, i, ctypes.byref(op)))
                out.append(OperationProfile(op.label.decode("utf-8", "replace"), op.calls, op.total_ns))
        finally:
            self._leave()
        return tuple(out)

    def rng_blocks(self, variant=0) -> int:
        """Counter blocks one training forward of `variant` (an id or a Variant) draws for dropout: the step
        between two calls' offsets (manifest variants[v].training.rng_blocks). 0 for a variant without dropout,
        an inference model or a bad id."""
        vid = variant.id if isinstance(variant, Variant) else operator.index(variant)
        return self._rng_blocks[vid] if 0 <= vid < len(self._rng_blocks) else 0

    def rng_state(self) -> RngState:
        """The model's dropout generator: its seed and the offset the next forward_train (or run) draws at."""
        rt = self._rt
        fn = rt.function("thunderc_model_rng_state")
        seed, offset = ctypes.c_uint64(), ctypes.c_uint64()
        handle = self._enter()
        try:
            rt.check(fn(handle, ctypes.byref(seed), ctypes.byref(offset)))
        finally:
            self._leave()
        return RngState(seed.value, offset.value)

    def set_rng_state(self, seed, offset=0):
        """Sets the model's dropout generator (torch.manual_seed's counterpart; (0, 0) at open). Must not
        overlap a training call."""
        rt = self._rt
        fn = rt.function("thunderc_model_set_rng_state")
        seed, offset = _uint64(seed, "seed"), _uint64(offset, "offset")
        handle = self._enter()
        try:
            rt.check(fn(handle, seed, offset))
        finally:
            self._leave()

    # ---- optimizer (thunderc --autograd --optimizer sgd|adamw; docs/training.md) ----

    def optimizer_defaults(self) -> OptimizerOptions:
        """torch.optim's defaults for the model's optimizer (thunderc_model_optimizer_options_init): what
        optimizer_step uses for each hyperparameter not given. The runtime's INVALID_ARGUMENT without one."""
        handle = self._enter()
        try:
            opts = self._optimizer_options(handle)
        finally:
            self._leave()
        return OptimizerOptions(opts.lr, opts.weight_decay, opts.momentum, opts.dampening, bool(opts.nesterov),
                                (opts.beta1, opts.beta2), opts.eps)

    def optimizer_step(self, gradients, lr=None, weight_decay=None, momentum=None, dampening=None, nesterov=None,
                       betas=None, eps=None):
        """One update of every trainable parameter, in place, by the compiled optimizer
        (thunderc_model_optimizer_step): torch.optim.SGD's or AdamW's arithmetic, with the state the runtime keeps
        (zero at open) and optimizer_steps counting. gradients: what backward returned (a tuple in the order of
        .gradients, NumPy arrays or torch tensors on the parameters' device; the inputs' gradients among them are
        not read and may be None). Hyperparameters not given are optimizer_defaults()'s; they are per call, so a
        learning-rate schedule passes each step's lr. sgd takes lr, weight_decay, momentum, dampening, nesterov;
        adamw lr, weight_decay, betas=(beta1, beta2), eps; the other optimizer's are refused. The runtime checks
        the gradients and refuses what torch.optim refuses (negative lr, nesterov without momentum, ...). Must
        not overlap another call on the model."""
        given = {name: value for name, value in (("lr", lr), ("weight_decay", weight_decay), ("momentum", momentum),
                                                 ("dampening", dampening), ("nesterov", nesterov), ("betas", betas),
                                                 ("eps", eps)) if value is not None}
        rt = self._rt
        fn = rt.function("thunderc_model_optimizer_step")
        grads = tuple(gradients) if isinstance(gradients, (tuple, list)) else (gradients,)
        handle = self._enter()
        try:
            opts = self._optimizer_options(handle)  # the runtime's error for a model without an optimizer
            self._set_hyperparameters(opts, given)
            views = []
            for i, g in enumerate(grads):
                if g is None and i < len(self._gradients) and not self._gradients[i].is_parameter:
                    views.append(None)  # an input's gradient, which the step does not read
                    continue
                if g is None:
                    raise Error(f"optimizer_step: {self._gradient_what(i)} is None; pass the gradients backward "
                                "returned", code=StatusCode.INVALID_ARGUMENT)
                views.append(_tensors.view(g, self._gradient_what(i)))
            arr = (DLTensor * len(views))(*[v.dl if v is not None else DLTensor() for v in views])
            rt.check(fn(handle, arr, len(views), ctypes.byref(opts)))
        finally:
            self._leave()

    def _optimizer_options(self, handle):
        """A thunderc_optimizer_options the runtime filled with its defaults. It is written into a buffer with
        room to spare, so that a runtime whose struct grew cannot write past it; such a runtime is refused."""
        rt = self._rt
        fn = rt.function("thunderc_model_optimizer_options_init")
        buffer = _OptionsBuffer()
        rt.check(fn(handle, ctypes.byref(buffer.options)))
        opts = buffer.options
        if opts.struct_size != ctypes.sizeof(_capi.OptimizerOptions):
            raise RuntimeLibraryError(
                f"{rt.path} (thunderc runtime {rt.version}) has a {opts.struct_size}-byte thunderc_optimizer_options, "
                f"this thunderc Python package a {ctypes.sizeof(_capi.OptimizerOptions)}-byte one; install the "
                "package and the runtime from the same thunderc release")
        return opts

    def _set_hyperparameters(self, opts, given):
        allowed = _HYPERPARAMETERS.get(self._optimizer, ())
        for name, value in given.items():
            if name not in allowed:
                raise Error(f"optimizer_step: {name} is not a hyperparameter of {self._optimizer} (it takes "
                            f"{', '.join(allowed)})", code=StatusCode.INVALID_ARGUMENT)
            if name == "nesterov":
                try:
                    opts.nesterov = operator.index(value)  # True/False, or 0/1 (the runtime refuses others)
                except TypeError:
                    raise Error(f"nesterov: expected a bool, got {type(value).__name__}",
                                code=StatusCode.INVALID_ARGUMENT) from None
            elif name == "betas":
                pair = tuple(value) if isinstance(value, (tuple, list)) else None
                if pair is None or len(pair) != 2:
                    raise Error(f"betas: expected a pair (beta1, beta2), got {value!r}",
                                code=StatusCode.INVALID_ARGUMENT)
                opts.beta1, opts.beta2 = _real(pair[0], "betas[0]"), _real(pair[1], "betas[1]")
            else:
                setattr(opts, name, _real(value, name))

    @property
    def optimizer_steps(self) -> int:
        """Optimizer steps taken (adamw's bias correction counts them; sgd's first step starts its buffers): 0 at
        open, one more per optimizer_step. Settable, with optimizer_state, to resume a run (m.optimizer_steps =
        n); setting it on a model without an optimizer raises the runtime's error, reading it gives 0."""
        fn = self._rt.function("thunderc_model_optimizer_steps")
        handle = self._enter()
        try:
            return fn(handle)
        finally:
            self._leave()

    @optimizer_steps.setter
    def optimizer_steps(self, steps):
        rt = self._rt
        fn = rt.function("thunderc_model_set_optimizer_steps")
        steps = _uint64(steps, "optimizer_steps")
        handle = self._enter()
        try:
            rt.check(fn(handle, steps))
        finally:
            self._leave()

    def optimizer_state(self, key, slot):
        """The live optimizer state of trainable parameter `key` (a name of .parameters, or its index) in slot
        `slot` (an index or a name of .optimizer_slots: sgd's "momentum_buffer", adamw's "exp_avg" and
        "exp_avg_sq"), not a copy: an array over the runtime's buffer as parameter() gives (NumPy; torch for
        CUDA device memory), which every optimizer_step reads and updates. Zero at open; write into it (with
        optimizer_steps) to resume a run."""
        index = self._parameter_key(key)
        if isinstance(slot, str):
            if slot in self._optimizer_slots:
                s = self._optimizer_slots.index(slot)
            elif self._optimizer is not None:
                raise Error(f"{self._path}'s optimizer ({self._optimizer}) has no state slot named {slot!r} "
                            f"(slots: {', '.join(self._optimizer_slots)})", code=StatusCode.INVALID_ARGUMENT)
            else:
                s = 0  # no optimizer: the runtime says why
        else:
            s = operator.index(slot)
            if s < 0:
                raise Error(f"optimizer state slot {slot} out of range", code=StatusCode.INVALID_ARGUMENT)
        fn = self._rt.function("thunderc_model_optimizer_state")
        slot_name = self._optimizer_slots[s] if s < len(self._optimizer_slots) else f"#{s}"
        what = f"optimizer state {slot_name} of parameter '{self._parameter_name(index)}' (#{index})"
        return self._live_array(lambda handle, dl: fn(handle, index, s, dl), what)

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

    def _closed_error(self):
        return Error(f"model {self._path} is closed", code=StatusCode.INVALID_ARGUMENT)

    def close(self):
        """Unloads the model once calls in flight on other threads have returned. Closing twice is fine;
        calling a closed model raises thunderc.Error."""
        if self._handle is None or not self._shut():
            return
        owner, self._owner = self._owner, None
        if not owner.arrays:
            owner.finalizer()  # thunderc_model_close, exactly once
        # else the parameter arrays hold `owner`: the model is closed when the last of them goes

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


class TrainContext(_CallGate):
    """What one Model.forward_train saved for its backward (a thunderc_train_context). Model.backward may
    run from it any number of times. Freed by close(), at the end of a `with` block, or when garbage-collected;
    it does not keep its model open, and may outlive it (closing it after the model is fine)."""

    _gated = "_pointer"

    def __init__(self, rt, pointer, model_path):
        self._pointer = pointer
        self._model_path = model_path
        self._finalizer = weakref.finalize(self, rt.function("thunderc_train_context_free"), pointer)
        self._finalizer.atexit = False
        self._init_gate()

    @property
    def closed(self) -> bool:
        return self._pointer is None

    def _closed_error(self):
        return Error(f"this training context (of {self._model_path}) is closed", code=StatusCode.INVALID_ARGUMENT)

    def close(self):
        """Frees the saved tensors (thunderc_train_context_free) once backward calls using them have
        returned. Closing twice is fine; backward from a closed context raises thunderc.Error."""
        if self._shut():
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<thunderc.TrainContext of {self._model_path!r}{', closed' if self.closed else ''}>"


def load(path, *, num_threads: Optional[int] = None, manifest=None, runtime=None) -> Model:
    """Opens a model compiled by thunderc.

    path: OUT.so. num_threads: threads the kernels of each call may use (None: $THUNDERC_NUM_THREADS,
    else all cores). manifest: the OUT.json to check against the copy embedded in the .so (None:
    OUT.json beside OUT.so when it exists). runtime: path of libthunderc_runtime.so (None: see
    thunderc.runtime)."""
    return Model(path, num_threads=num_threads, manifest=manifest, runtime=runtime)
