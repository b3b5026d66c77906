"""A stand-in for torch, for make test only (tests/scripts/test_compile_reference.sh,
test_profile_reference.sh, test_no_grad_reference.sh and test_beside.sh put
this folder first on PYTHONPATH): just enough of torch's API for
transformer_reference.py, compile_reference.py, profile_reference.py (with
mlp_reference.py's Training), no_grad_reference.py and the counterparts in
tests/torch/beside/ to run their whole control flow on a machine without
torch or a GPU. Its "allocator" counts the bytes
of the stand-in tensors alive (Python's reference counting frees them, as
PyTorch's caching allocator sees a tensor freed), so the figures follow the
scripts' tensor lifetimes; its events tick 1 ms per record; its streams do
their work at once (query() says idle); its saved-tensor hooks
(torch.autograd.graph.save_on_cpu, saved_tensors_hooks) pack and unpack one
temporary of each module call; torch.cuda.cudart() registers any memory. Its profiler
reports the same GPU activities whatever ran (_PROFILE_TRACE: PyTorch's
kernel names, durations that make tests/fixtures/profile/'s table over the
1 ms between two events). Nothing here is PyTorch's behaviour beyond the
names. Standard library only.

STUB_COMPILE_FAIL=1: the compiled module raises on its first call.
STUB_CRASH=1: the compiled module ends the process (exit 9) on its first call.
STUB_NO_CUDA=1: no CUDA device.
"""
import collections
import contextlib
import json
import os
import sys
import types

__version__ = "0.0-stub"
__path__ = []  # a package, so that torch.nn.functional and the others import
version = types.SimpleNamespace(cuda="0.0-stub")
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 0),
                                 cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)))
float16, bfloat16, float32 = "float16", "bfloat16", "float32"
uint8, int32, int64, strided = "uint8", "int32", "int64", "strided"
_mem = {"current": 0, "peak": 0}
_hooks = []  # the saved-tensor hooks in force: (pack, unpack), innermost last
_grad = {"enabled": True, "inference": False}  # torch.no_grad / inference_mode state


def _take(n):
    _mem["current"] += n
    _mem["peak"] = max(_mem["peak"], _mem["current"])


class Tensor:
    is_cuda, device, dtype, layout = True, "cuda:0", "float32", "strided"

    def __init__(self, nbytes, value=0.5):
        self.nbytes, self.value = nbytes, value
        self.grad_fn = "StubBackward" if _grad["enabled"] else None
        self._inference = _grad["inference"]
        _take(nbytes)

    def numel(self):
        return self.nbytes // 4

    def element_size(self):
        return 4

    def is_inference(self):
        return self._inference

    def __del__(self):
        _mem["current"] -= self.nbytes

    def __deepcopy__(self, memo):
        """A copy is a tensor of its own, counted (transformer_reference's
        HOST_MODELS deep-copies a kept model's parameters)."""
        return Tensor(self.nbytes, self.value)

    def __truediv__(self, k):
        return Tensor(4, self.value / k)

    def backward(self):
        _take(0)

    def detach(self):
        return self

    def pin_memory(self):
        return self

    def __getitem__(self, i):
        return self

    def copy_(self, other, non_blocking=False):
        self.value = other.value
        return self

    def sum(self, *args, **kwargs):
        return self

    def fill_(self, v):
        return self

    def zero_(self):
        return self

    def view(self, *args):
        return self

    def size(self):
        return (self.nbytes // 4,)

    def to(self, *args, non_blocking=False, **kwargs):
        return Tensor(self.nbytes, self.value)

    def cpu(self):
        return Tensor(self.nbytes, self.value)

    def record_stream(self, stream):
        pass

    def data_ptr(self):
        return id(self)

    def item(self):
        return self.value

    def __float__(self):
        return float(self.value)

    def untyped_storage(self):
        return types.SimpleNamespace(nbytes=lambda: self.nbytes, data_ptr=lambda: id(self))


def randn(*shape, device=None, dtype=None, requires_grad=False):
    return Tensor(4096)


def zeros(*shape, dtype=None, device=None):
    return Tensor(0)


def empty(*shape, device=None, dtype=None, pin_memory=False, layout=None):
    return Tensor(4096)


def randint(low, high, size, dtype=None, device=None, generator=None):
    return Tensor(4096)


def equal(a, b):
    return True


def tensor(data, dtype=None, device=None):
    return Tensor(8 * len(data))


def sum(t, dim=None, dtype=None, out=None):  # noqa: A001 (torch's name)
    return out if out is not None else Tensor(8, t.value)


class Generator:
    def __init__(self, device=None):
        pass

    def manual_seed(self, seed):
        return self


def mm(a, b, out=None):
    return out if out is not None else Tensor(4096)


def manual_seed(seed):
    pass


@contextlib.contextmanager
def _grad_mode(enabled, inference=False):
    before = dict(_grad)
    _grad.update(enabled=enabled, inference=inference)
    try:
        yield
    finally:
        _grad.update(before)


def no_grad():
    return _grad_mode(False)


def inference_mode():
    return _grad_mode(False, True)


def _transformer_encoder_layer_fwd(src, *args):
    return Tensor(4096)


def _native_multi_head_attention(*args):
    return Tensor(4096), None


def device(kind, index=0):
    return "%s:%d" % (kind, index)


def autocast(kind, dtype=None):
    return contextlib.nullcontext()


def _fused_sdp_choice(*args):
    return 2


def compile(module):
    counters = sys.modules["torch._dynamo.utils"].counters
    state = {"compiled": False}

    def call(*args, **kwargs):
        if os.environ.get("STUB_CRASH"):
            os._exit(9)
        if os.environ.get("STUB_COMPILE_FAIL"):
            raise RuntimeError("backend='inductor' raised:\nRuntimeError: stub compile failure\n\nmore")
        if not state["compiled"]:
            counters["stats"]["unique_graphs"] += 1
            counters["inductor"]["fxgraph_cache_miss"] += 1
            state["compiled"] = True
            state["code"] = Tensor(100000)  # what the compiled module keeps
        return module(*args, **kwargs)
    return call


class _Event:
    clock_ms = 0.0

    def __init__(self, enable_timing=False):
        self.at = 0.0

    def record(self, stream=None):
        _Event.clock_ms += 1.0
        self.at = _Event.clock_ms

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return end.at - self.at


class _Stream:
    """A CUDA stream: work on it is done at once here."""

    def __init__(self, device=None, priority=0):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def query(self):
        return True

    def synchronize(self):
        pass


_streams = [_Stream()]  # the current stream, innermost last


@contextlib.contextmanager
def _stream(s):
    _streams.append(s)
    try:
        yield s
    finally:
        _streams.pop()


def _memory_stats():
    return {"allocated_bytes.all.peak": _mem["peak"], "allocated_bytes.all.current": _mem["current"],
            "reserved_bytes.all.peak": 2 * _mem["peak"], "reserved_bytes.all.current": 2 * _mem["current"]}


def _reset_peak(*args):
    _mem["peak"] = _mem["current"]


class OutOfMemoryError(RuntimeError):
    pass


_cleared = {"workspaces": 0}  # calls of _C._cuda_clearCublasWorkspaces (beside.release)
_C = types.SimpleNamespace(_cuda_clearCublasWorkspaces=lambda: _cleared.__setitem__("workspaces",
                                                                                   _cleared["workspaces"] + 1))

cuda = types.SimpleNamespace(
    OutOfMemoryError=OutOfMemoryError, empty_cache=lambda: None, _sleep=lambda cycles: _spin(cycles),
    is_available=lambda: not os.environ.get("STUB_NO_CUDA"), device_count=lambda: 1,
    set_device=lambda d: None, init=lambda: None, synchronize=lambda *a: None, Event=_Event, Stream=_Stream,
    stream=_stream, current_stream=lambda *a: _streams[-1],
    cudart=lambda: types.SimpleNamespace(cudaHostRegister=lambda ptr, n, flags: 0,
                                         cudaHostUnregister=lambda ptr: 0),
    get_device_properties=lambda d: types.SimpleNamespace(name="stub GPU", multi_processor_count=1, major=9,
                                                          minor=0, total_memory=1 << 30),
    reset_peak_memory_stats=_reset_peak, memory_stats=_memory_stats,
    memory_allocated=lambda *a: _mem["current"], max_memory_allocated=lambda *a: _mem["peak"],
    max_memory_reserved=lambda *a: 2 * _mem["peak"], memory_reserved=lambda *a: 2 * _mem["current"],
    memory=types.SimpleNamespace(_record_memory_history=lambda **k: None,
                                 _snapshot=lambda: {"device_traces": [[]]}))


class _Optimizer:
    def __init__(self, params, lr=0.0, momentum=0.0):
        self.params = params
        self.state = {}  # per parameter, its state's tensors by name

    def step(self):
        self.state = {0: {"exp_avg": Tensor(8 * len(self.params))}}

    def zero_grad(self, set_to_none=False):
        pass


optim = types.SimpleNamespace(SGD=_Optimizer, Adam=_Optimizer, AdamW=_Optimizer)


class _GradScaler:
    def __init__(self, kind):
        self.scale_value = 65536.0

    def scale(self, loss):
        return loss

    def step(self, opt):
        opt.step()

    def update(self):
        pass

    def get_scale(self):
        return self.scale_value


amp = types.SimpleNamespace(GradScaler=_GradScaler)


# ------------------------------------------------------------ submodules

def _module(name, **attrs):
    m = types.ModuleType("torch." + name)
    m.__dict__.update(attrs)
    sys.modules["torch." + name] = m
    return m


class _Module:
    def __init__(self, nparams):
        self.params = [Tensor(1024) for _ in range(nparams)]
        self.training = True

    def train(self):
        self.training = True
        return self

    def eval(self):
        self.training = False
        return self

    def parameters(self):
        return iter(self.params)

    def cuda(self, device=None):
        """Module.cuda (a model built on the host, then moved): the stand-in's
        parameters are counted where they are made, so moving changes nothing."""
        return self

    def __call__(self, *args, **kwargs):
        scratch = Tensor(8192)  # a temporary of the forward
        if _hooks:  # saved for the backward through the hooks in force, and brought back
            pack, unpack = _hooks[-1]
            unpack(pack(scratch))
        del scratch
        return Tensor(4096)


def _compiled_layers(layers, x):
    """Calls the layers torch.compile replaced (regional compilation); the
    stand-in's own layers do nothing apart from the model's call."""
    for layer in layers:
        if not isinstance(layer, _Module):
            layer(x)


class _Transformer(_Module):
    def __init__(self, d_model, nhead, num_encoder_layers, num_decoder_layers, dim_feedforward, **kw):
        super().__init__(num_encoder_layers + num_decoder_layers)
        self.encoder = types.SimpleNamespace(layers=[_Module(1)], norm=_Module(0))
        self.decoder = types.SimpleNamespace(layers=[_Module(1)], norm=_Module(0))

    def __call__(self, *args, **kwargs):
        _compiled_layers(self.encoder.layers + self.decoder.layers, args[0] if args else None)
        return super().__call__(*args, **kwargs)

    @staticmethod
    def generate_square_subsequent_mask(n, device=None):
        return Tensor(4 * n * n)


class _EncoderLayer(_Module):
    def __init__(self, d_model, nhead, dim_feedforward, **kw):
        super().__init__(2)


class _Encoder(_Module):
    def __init__(self, layer, n, enable_nested_tensor=True):
        super().__init__(2 * n)
        self.layers = [_Module(1) for _ in range(n)]

    def __call__(self, src, *args, **kwargs):
        if self.training or _grad["enabled"]:
            _compiled_layers(self.layers, src)
            return super().__call__(src, *args, **kwargs)
        x = src  # eval() without autograd: the fast path, looked up on torch at each call
        for _ in self.layers:
            x = sys.modules[__name__]._transformer_encoder_layer_fwd(x)
        return x


class _Sequential(_Module):
    def __init__(self, *mods):
        self.mods = mods
        self.params = [p for m in mods for p in m.params]
        self.training = True


functional = types.SimpleNamespace(mse_loss=lambda out, tgt: Tensor(4, 1.25))
nn = _module("nn", Transformer=_Transformer, TransformerEncoderLayer=_EncoderLayer,
             TransformerEncoder=_Encoder, functional=functional, __path__=[],
             Linear=lambda fan_in, fan_out, bias=True, device=None: _Module(2 if bias else 1),
             ReLU=lambda: _Module(0),
             Sequential=_Sequential)
sys.modules["torch.nn.functional"] = functional
utils = _module("utils", __path__=[])
utils.checkpoint = _module("utils.checkpoint", checkpoint=lambda mod, *a, use_reentrant=True: mod(a[0]),
                           checkpoint_sequential=lambda mod, s, x, use_reentrant=True: mod(x))
_dynamo = _module("_dynamo", __path__=[])
_dynamo.utils = _module("_dynamo.utils", counters=collections.defaultdict(collections.Counter))
_dynamo.reset = lambda: None
_dynamo.config = _module("_dynamo.config", recompile_limit=8, suppress_errors=False)
_inductor = _module("_inductor", __path__=[])
_inductor.config = _module("_inductor.config", max_autotune=False,
                           triton=types.SimpleNamespace(cudagraphs=False))
_functorch = _module("_functorch", __path__=[])
_functorch.config = _module("_functorch.config", activation_memory_budget=1.0)


@contextlib.contextmanager
def _saved_tensors_hooks(pack, unpack):
    _hooks.append((pack, unpack))
    try:
        yield
    finally:
        _hooks.pop()


def _save_on_cpu(pin_memory=False, device_type="cuda"):
    return _saved_tensors_hooks(lambda t: t.cpu(), lambda t: t.to("cuda", non_blocking=pin_memory))


autograd = _module("autograd", __path__=[], DeviceType=types.SimpleNamespace(CPU="cpu", CUDA="cuda"))
autograd.graph = _module("autograd.graph", saved_tensors_hooks=_saved_tensors_hooks, save_on_cpu=_save_on_cpu)


# ------------------------------------------------------------ profiler

_TS = [0.0]  # the stand-in GPU's clock, us: each activity starts 20 us after the last one ended


def _kernel(name, dur_us, cat="kernel", overlap=False):
    """One trace event; GPU activities one after another, 20 us apart (the
    GPU waiting for the host), or (overlap) at the same start as the one
    before (another stream)."""
    gpu = cat in ("kernel", "gpu_memcpy", "gpu_memset")
    ts = _TS[1] if overlap and len(_TS) > 1 else _TS[0]
    if gpu and not overlap:
        _TS[1:] = [ts]
        _TS[0] = ts + dur_us + 20.0
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur_us}


# One step's GPU activities, in microseconds a kind: gemm 400, attention 150,
# layernorm 50, elementwise 30, optimizer 70, copy 40 (tests/fixtures/profile/),
# and host events the profile must leave out. On its timeline (ts), 17 of the
# 18 GPU activities run one after another 20 us apart, the memcpy beside the
# kernel before it: busy 735 us of a span of 1055 us, idle share 0.3033.
_PROFILE_TRACE = [
    _kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
            "segment_k_off_kernel__5x_cublas", 250),
    _kernel("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", 100),
    _kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)", 40),
    _kernel("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(...)", 10),
    _kernel("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
            "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", 100),
    _kernel("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", 50),
    _kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, "
            "float const*, float const*, float const*, float*, float*, float*)", 30),
    _kernel("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, "
            "long, float const*, float const*, float const*, float const*, float*, float*)", 20),
    _kernel("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, "
            "4, bool>(...)", 10),
    _kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<"
            "float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
            "float, float)#1}>, unsigned int, float, 4, 4> >(...)", 10),
    _kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
            "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", 5),
    _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", 5),
    _kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
            "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::PointwiseOpScalarListFunctor"
            "<float, 4, 3, 0>, std::multiplies<float>, float>(...)", 60),
    _kernel("_amp_update_scale_cuda_kernel(float*, int*, float const*, double, double, int)", 10),
    _kernel("Memcpy DtoH (Device -> Pinned)", 5, "gpu_memcpy", overlap=True),
    _kernel("Memset (Device)", 5, "gpu_memset"),
    _kernel("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
            "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda"
            "(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, "
            "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
            "at::native::memory::StoreWithCast<1> >(...)", 20),
    _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<"
            "char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", 10),
    _kernel("cudaLaunchKernel", 999, "cuda_runtime"),
    _kernel("aten::mm", 5000, "cpu_op"),
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 0},
]


_STEP_US = 10000.0  # a step on the stand-in's timeline: one step's trace every 10 ms
_PROFILING = []     # the profile open now
_SPIN = ("ph", "X", "cat", "kernel", "name", "at::cuda::(anonymous namespace)::spin_kernel(long)")


def _spin(cycles):
    """torch.cuda._sleep: a spin kernel; in a profile, a marker between steps."""
    if _PROFILING:
        _PROFILING[-1].spins += 1


class _Profile:
    """Its trace: _PROFILE_TRACE; or, where torch.cuda._sleep's spin kernels
    ran inside it, a spin kernel every 10 ms with one copy of it after each
    but the last (the steps between them); or, where record_functions ran
    inside it, one copy a record_function, 10 ms apart, each inside a
    user_annotation event of that name (as PyTorch's trace marks them).
    Its events are also Kineto's list (prof.profiler.kineto_results)."""

    def __init__(self, activities=None, **kw):
        self.activities = activities
        self.steps = []
        self.spins = 0
        self.profiler = types.SimpleNamespace(kineto_results=types.SimpleNamespace(
            events=lambda: [_KinetoEvent(e) for e in self.trace_events()]))

    def __enter__(self):
        _PROFILING.append(self)
        return self

    def __exit__(self, *exc):
        _PROFILING.remove(self)
        return False

    def trace_events(self):
        if self.spins:
            events = []
            for i in range(self.spins):
                t0 = i * _STEP_US
                events.append(dict(zip(_SPIN[0::2], _SPIN[1::2]), pid=0, tid=7, ts=t0, dur=1.0))
                if i + 1 < self.spins:
                    events += [dict(e, ts=e["ts"] + t0 + 10.0) for e in _PROFILE_TRACE]
            return events
        events = list(_PROFILE_TRACE) if not self.steps else []
        for i, name in enumerate(self.steps):
            t0 = i * _STEP_US
            events += [dict(e, ts=e["ts"] + t0) for e in _PROFILE_TRACE]
            events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 0, "tid": 1,
                           "ts": t0, "dur": _STEP_US - 1.0})
        return events

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump({"traceEvents": self.trace_events()}, f)


class _KinetoEvent:
    """One event of Kineto's list: a GPU activity's device type is CUDA."""

    def __init__(self, e):
        self.e = e

    def device_type(self):
        gpu = self.e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        return autograd.DeviceType.CUDA if gpu else autograd.DeviceType.CPU

    def name(self):
        return self.e.get("name", "")

    def start_ns(self):
        return int(round(float(self.e.get("ts", 0)) * 1000))

    def duration_ns(self):
        return int(round(float(self.e.get("dur", 0)) * 1000))


class _RecordFunction:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if _PROFILING:
            _PROFILING[-1].steps.append(self.name)
        return False


profiler = _module("profiler", profile=_Profile, record_function=_RecordFunction,
                   ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda"))
