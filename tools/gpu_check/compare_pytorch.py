#!/usr/bin/env python3
"""PyTorch side of scripts/gpu-check.sh, and its report.

For every model of a directory prepared by `scripts/gpu-check.sh prepare` (DIR/models.tsv), with the results
of thunderc_gpu_check (RESULTS/<name>.json, RESULTS/<name>/output0.npy ...):

* loads the TorchScript module (torch.jit.load onto the device, frozen) and times it on the same input with
  the same warm-up and iteration counts (CUDA events, one call between two events, like the runner);
* rebuilds the eager nn.Module (samples: the classes of samples/make_samples.py; real models: torchvision or
  nn.TransformerEncoderLayer as scripts/make_real_models.py makes them) with the TorchScript module's
  state_dict, and times it; then torch.compile (mode "default") of it, each warm-up bounded by
  --compile-timeout and the whole script by --budget (then n/a, with the reason);
* compares thunderc's outputs with PyTorch's on the same device (TF32 off: plain float32) and reports the
  largest absolute difference next to thunderc's against LibTorch's CPU output (from the runner).

Writes a markdown table (--out-md, also printed) and everything as JSON (--out-json). Without torch it still
writes the report, with the PyTorch columns n/a. `--device cpu` runs the PyTorch part on the CPU (a smoke test
on a machine without a GPU; timings then use time.perf_counter).
Exit status: 0, or 2 when a model failed or differed (thunderc against LibTorch CPU, or against PyTorch).
"""
import argparse
import csv
import json
import math
import os
import platform
import signal
import sys
import time
import traceback


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="directory prepared by scripts/gpu-check.sh prepare")
    p.add_argument("--results", required=True, help="thunderc_gpu_check results: NAME.json and NAME/output*.npy")
    p.add_argument("--make-samples", default=None, help="samples/make_samples.py (eager classes of the samples)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile-timeout", type=float, default=60.0, help="seconds for one torch.compile warm-up")
    p.add_argument("--budget", type=float, default=180.0, help="seconds for this whole script (soft)")
    p.add_argument("--tf32", choices=["off", "default"], default="off",
                   help="off (default): cuDNN convolutions in plain float32; default: leave PyTorch's settings")
    p.add_argument("--skip-pytorch", default=None, metavar="WHY",
                   help="write the report from thunderc's results alone (PyTorch columns n/a, WHY noted)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--atol", type=float, default=None,
                   help="largest accepted |thunderc - PyTorch| (default: 1e-3, on the same device)")
    p.add_argument("--gpu-name", default=None, help="the GPU's name for the report (e.g. from nvidia-smi)")
    p.add_argument("--only", nargs="*", default=None, help="models to check (default: all)")
    p.add_argument("--out-json", default=None)
    p.add_argument("--out-md", default=None)
    return p.parse_args(argv)


class Timeout(Exception):
    pass


def with_timeout(seconds, fn):
    """fn() with SIGALRM after `seconds` (main thread only); Timeout when it fires."""
    if seconds <= 0:
        raise Timeout("no time left")

    def handler(signum, frame):
        raise Timeout(f"took more than {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def stats(times):
    t = sorted(times)
    n = len(t)
    if n == 0:
        return None
    median = t[n // 2] if n % 2 else (t[n // 2 - 1] + t[n // 2]) / 2
    p90 = t[max(int(math.ceil(0.9 * n)), 1) - 1]  # nearest rank, as the runner
    return {"min_ms": t[0], "median_ms": median, "p90_ms": p90, "mean_ms": sum(t) / n}


def short(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def read_models(dir_):
    with open(os.path.join(dir_, "models.tsv"), newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def read_runner(results, name):
    path = os.path.join(results, name + ".json")
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        return json.loads(lines[-1])
    except Exception as e:
        return {"ok": False, "error": f"no thunderc result ({short(e)})"}


# ---------------------------------------------------------------------------------------------- PyTorch side

class Torch:
    """What the PyTorch side needs, imported lazily so that the report works without torch."""

    def __init__(self, device, tf32="off"):
        import numpy
        import torch
        self.np = numpy
        self.torch = torch
        self.device = torch.device(device)
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.settings = {}
        if tf32 == "off":
            # Plain float32 (thunderc's kernels are float32 on CUDA cores). cuBLAS matmul already is by default
            # (torch.backends.cuda.matmul.allow_tf32 is False); cuDNN convolutions use TF32 unless told not to.
            # Only the legacy flag is written: torch >= 2.9 refuses a mix of the legacy and the new
            # (fp32_precision) settings, and its inductor still reads the legacy ones.
            try:
                torch.backends.cudnn.allow_tf32 = False
                self.settings["cudnn.allow_tf32"] = False
            except Exception as e:
                self.settings["cudnn.allow_tf32"] = f"not set: {short(e)}"
        else:
            self.settings["tf32"] = "PyTorch defaults (cuDNN convolutions may use TF32)"

    def info(self):
        torch = self.torch
        i = {"torch": torch.__version__, "python": platform.python_version(), "device": str(self.device),
             "settings": self.settings}
        if self.device.type == "cuda":
            i["gpu"] = torch.cuda.get_device_name(0)
            i["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
            i["cuda"] = torch.version.cuda
            try:
                i["cudnn"] = torch.backends.cudnn.version()
            except Exception:
                pass
        return i

    def flat(self, out):
        """Outputs as a list of CPU numpy arrays (tuples/lists flattened)."""
        if isinstance(out, (tuple, list)):
            return [a for o in out for a in self.flat(o)]
        return [out.detach().float().cpu().numpy() if out.dtype.is_floating_point else out.detach().cpu().numpy()]

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def time(self, fn, x, warmup, iters):
        """Per-call times (ms) and the mean of back-to-back calls, as thunderc_gpu_check measures."""
        torch = self.torch
        with torch.no_grad():
            for _ in range(warmup):
                fn(x)
            self.sync()
            times = []
            if self.device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                for _ in range(iters):
                    start.record()
                    fn(x)
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end))
                start.record()
                for _ in range(iters):
                    fn(x)
                end.record()
                end.synchronize()
                pipelined = start.elapsed_time(end) / iters
            else:
                for _ in range(iters):
                    t0 = time.perf_counter()
                    fn(x)
                    times.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn(x)
                pipelined = (time.perf_counter() - t0) * 1e3 / iters
        s = stats(times)
        s["pipelined_ms"] = pipelined
        return s

    def max_abs_diff(self, got, want):
        """Largest |got - want| over outputs (lists of numpy arrays); None when shapes differ; nan for NaNs."""
        np = self.np
        if len(got) != len(want):
            return None
        worst = 0.0
        for g, w in zip(got, want):
            if tuple(g.shape) != tuple(w.shape):
                return None
            if g.size == 0:
                continue
            g, w = g.astype(np.float64), w.astype(np.float64)
            both_nan = np.isnan(g) & np.isnan(w)
            d = np.where(both_nan, 0.0, np.abs(g - w))
            if np.isnan(d).any():
                return float("nan")
            worst = max(worst, float(d.max()))
        return worst


def load_make_samples(path):
    """samples/make_samples.py as a module (its classes); PYTHONHASHSEED=0 keeps it from re-executing."""
    import importlib.util
    os.environ["PYTHONHASHSEED"] = "0"
    spec = importlib.util.spec_from_file_location("thunderc_make_samples", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def eager_module(name, kind, samples_mod, torch):
    """A fresh nn.Module of the model's architecture (weights loaded later), or raise."""
    if kind == "sample":
        if samples_mod is None:
            raise RuntimeError("samples/make_samples.py not available")
        m = samples_mod
        ctors = {
            "mlp": lambda: m.MLP(),
            "mlp_scripted": lambda: m.MLP(),
            "cnn": lambda: m.SmallCNN(),
            "gpt_block": lambda: m.GPTBlock(),
            "gpt_block_scripted": lambda: m.GPTBlockAnyRank(m.GPTBlock()),
        }
        if name not in ctors:
            raise RuntimeError(f"no eager class known for sample {name}")
        return ctors[name]()
    base = name[: -len("_fastpath")] if name.endswith("_fastpath") else name
    if base == "transformer_encoder_layer":
        return torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, batch_first=True)
    import torchvision.models as tvm
    if not hasattr(tvm, base):
        raise RuntimeError(f"torchvision.models has no {base}")
    return getattr(tvm, base)(weights=None)


def check_model(row, args, T, samples_mod, deadline, results_dir):
    """The PyTorch columns of one model (a dict)."""
    torch, np = T.torch, T.np
    r = {}
    name, kind = row["name"], row["kind"]
    x_np = np.load(os.path.join(args.dir, row["input"]))
    x = torch.from_numpy(x_np).to(T.device)
    expected = [np.load(os.path.join(args.dir, row["expected"]))]

    # TorchScript: loaded onto the device, eval, frozen (as thunderc bench --compare does with LibTorch).
    scripted = torch.jit.load(os.path.join(args.dir, row["pt"]), map_location=T.device).eval()
    try:
        ts = torch.jit.freeze(scripted)
        r["torchscript_frozen"] = True
    except Exception as e:
        ts, r["torchscript_frozen"] = scripted, f"not frozen: {short(e)}"
    with torch.no_grad():
        ref = T.flat(ts(x))
    T.sync()
    r["torchscript"] = T.time(ts, x, args.warmup, args.iters)
    r["pytorch_vs_libtorch_cpu"] = T.max_abs_diff(ref, expected)

    # thunderc's outputs against PyTorch's on the same device.
    outs = []
    i = 0
    while os.path.exists(os.path.join(results_dir, name, f"output{i}.npy")):
        outs.append(np.load(os.path.join(results_dir, name, f"output{i}.npy")))
        i += 1
    r["thunderc_vs_pytorch"] = T.max_abs_diff(outs, ref) if outs else None

    # Eager, rebuilt with the TorchScript module's weights; then torch.compile of it.
    eager = None
    try:
        eager = eager_module(name, kind, samples_mod, torch)
        eager.load_state_dict(scripted.state_dict(), strict=True)
        eager = eager.to(T.device).eval()
        with torch.no_grad():
            r["eager_vs_torchscript"] = T.max_abs_diff(T.flat(eager(x)), ref)
        r["eager"] = T.time(eager, x, args.warmup, args.iters)
    except Exception as e:
        r["eager_error"] = short(e)
        eager = None

    if args.no_compile:
        r["compile_error"] = "skipped (--no-compile)"
    elif not hasattr(torch, "compile"):
        r["compile_error"] = f"torch {torch.__version__} has no torch.compile"
    elif eager is None:
        r["compile_error"] = "no eager module to compile (" + r.get("eager_error", "?") + ")"
    else:
        left = deadline - time.monotonic()
        if left < 10:
            r["compile_error"] = "skipped: time budget spent"
        else:
            limit = min(args.compile_timeout, left)
            try:
                torch._dynamo.reset()
                compiled = torch.compile(eager, mode="default")
                t0 = time.monotonic()

                def warm():
                    with torch.no_grad():
                        return T.flat(compiled(x))

                got = with_timeout(limit, warm)  # the compile happens on the first call
                T.sync()
                r["compile_s"] = time.monotonic() - t0
                r["compiled_vs_torchscript"] = T.max_abs_diff(got, ref)
                r["compiled"] = T.time(compiled, x, args.warmup, args.iters)
            except Timeout as e:
                r["compile_error"] = f"torch.compile warm-up {e} (limit {limit:.0f} s)"
            except Exception as e:
                r["compile_error"] = short(e)
            finally:
                try:
                    torch._dynamo.reset()
                except Exception:
                    pass
    return r


# ------------------------------------------------------------------------------------------------- report

def fmt_ms(v):
    if v is None:
        return "n/a"
    return f"{v:.3f}" if v >= 1 else f"{v:.4f}"


def fmt_diff(v):
    if v is None:
        return "n/a"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{v:.1e}"


def speedup(theirs, ours):
    if not theirs or not ours:
        return "n/a"
    return f"{theirs / ours:.2f}x"


def report(entries, meta):
    lines = []
    gpu = meta.get("pytorch", {}).get("gpu") or meta.get("gpu") or "GPU unknown"
    where = "PyTorch CUDA" if meta["device"] == "cuda" else "PyTorch " + meta["device"]
    timer = "CUDA events" if meta["device"] == "cuda" else "PyTorch: time.perf_counter"
    lines.append(f"GPU check: {gpu}; torch {meta.get('pytorch', {}).get('torch', 'n/a')} on {meta['device']}; "
                 f"{meta['iters']} timed calls after {meta['warmup']} warm-up, medians in ms ({timer}, one "
                 f"call at a time); PyTorch " +
                 ("in float32 without TF32." if meta.get("tf32") == "off" else "with its default TF32 settings."))
    lines.append("")
    lines.append("| model | shape | thunderc ms | TorchScript ms | eager ms | torch.compile ms | vs TorchScript "
                 f"| vs compile | max abs diff vs LibTorch CPU | max abs diff vs {where} | status |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for e in entries:
        t = e["thunderc"]
        p = e.get("pytorch") or {}
        ours = t.get("median_ms")
        ts = (p.get("torchscript") or {}).get("median_ms")
        eg = (p.get("eager") or {}).get("median_ms")
        co = (p.get("compiled") or {}).get("median_ms")
        lines.append("| " + " | ".join([
            e["name"], e["shapes"].split("=", 1)[-1], fmt_ms(ours), fmt_ms(ts), fmt_ms(eg), fmt_ms(co),
            speedup(ts, ours), speedup(co, ours), fmt_diff(t.get("max_abs_diff")),
            fmt_diff(p.get("thunderc_vs_pytorch")), e["status"]]) + " |")
    lines.append("")
    lines.append("Speedup: the PyTorch median over thunderc's (above 1: thunderc is faster). LibTorch CPU: "
                 "samples/<name>.expected.npy (real models: LibTorch's CPU kernels, op by op).")
    notes = []
    for e in entries:
        t, p = e["thunderc"], e.get("pytorch") or {}
        if t.get("error"):
            notes.append(f"{e['name']}: thunderc: {t['error']}")
        elif t.get("parity") and not t.get("parity_ok", True):
            notes.append(f"{e['name']}: thunderc differs from LibTorch CPU: " +
                         "; ".join(x.get("problem", "") for x in t["parity"] if not x.get("ok")))
        for key in ("pytorch_error", "eager_error", "compile_error"):
            if p.get(key) or e.get(key):
                notes.append(f"{e['name']}: {key.split('_')[0]}: {p.get(key) or e.get(key)}")
        if p.get("compile_s") is not None:
            notes.append(f"{e['name']}: torch.compile warm-up {p['compile_s']:.1f} s")
    images = sorted({e["thunderc"].get("image") for e in entries if e["thunderc"].get("image")})
    if images:
        notes.append("thunderc loaded: " + ", ".join(images))
    if meta.get("pytorch_error"):
        notes.append("PyTorch: " + meta["pytorch_error"])
    if notes:
        # One line for a note that every model shares (e.g. no torch.compile in this torch).
        tails = {}
        for n in notes:
            tails.setdefault(n.split(": ", 1)[-1], []).append(n)
        lines.append("")
        done = set()
        for n in notes:
            tail = n.split(": ", 1)[-1]
            group = tails[tail]
            if len(group) > 2 and len(group) == len(entries) and ": " in n:
                if tail not in done:
                    done.add(tail)
                    lines.append("- all models: " + tail)
            else:
                lines.append("- " + n)
    return "\n".join(lines) + "\n"


def main(argv):
    args = parse_args(argv)
    started = time.monotonic()
    deadline = started + args.budget
    rows = read_models(args.dir)
    if args.only:
        rows = [r for r in rows if r["name"] in args.only]
    meta = {"iters": args.iters, "warmup": args.warmup, "device": args.device, "dir": os.path.abspath(args.dir),
            "tf32": args.tf32}
    if args.gpu_name:
        meta["gpu"] = args.gpu_name

    T = None
    try:
        if args.skip_pytorch:
            raise RuntimeError(args.skip_pytorch)
        T = Torch(args.device, args.tf32)
        meta["pytorch"] = T.info()
    except Exception as e:
        meta["pytorch_error"] = f"PyTorch unavailable here ({short(e)}): its columns are n/a"
        print(meta["pytorch_error"], file=sys.stderr)
    samples_mod = None
    if T is not None and args.make_samples:
        try:
            samples_mod = load_make_samples(args.make_samples)
        except Exception as e:
            meta["make_samples_error"] = short(e)
    tol = 1e-3 if args.atol is None else args.atol

    entries, failed = [], False
    for row in rows:
        name = row["name"]
        t = read_runner(args.results, name)
        e = {"name": name, "kind": row["kind"], "shapes": row["shapes"], "expected_from": row.get("expected_from"),
             "compile_s": row.get("compile_s"), "thunderc": t}
        if T is not None:
            t0 = time.monotonic()
            try:
                e["pytorch"] = check_model(row, args, T, samples_mod, deadline, args.results)
            except Exception as ex:
                e["pytorch"] = {"pytorch_error": short(ex)}
                e["pytorch_traceback"] = traceback.format_exc()[-3000:]
            e["pytorch_s"] = time.monotonic() - t0
        status = []
        if "median_ms" not in t:
            status.append("thunderc FAILED")
        elif t.get("parity_ok") is False:
            status.append("DIFFERS (LibTorch CPU)")
        d = (e.get("pytorch") or {}).get("thunderc_vs_pytorch")
        if d is not None and not (d <= tol):
            status.append(f"DIFFERS (PyTorch, > {tol:g})")
        e["status"] = ", ".join(status) or "ok"
        failed = failed or bool(status)
        entries.append(e)
        p = e.get("pytorch") or {}
        print(f"{name:<36} thunderc {fmt_ms(t.get('median_ms'))} ms, TorchScript "
              f"{fmt_ms((p.get('torchscript') or {}).get('median_ms'))} ms, torch.compile "
              f"{fmt_ms((p.get('compiled') or {}).get('median_ms'))} ms, |thunderc - PyTorch| "
              f"{fmt_diff(p.get('thunderc_vs_pytorch'))}  [{e['status']}]", flush=True)

    meta["seconds"] = time.monotonic() - started
    md = report(entries, meta)
    print()
    print(md, end="")
    if args.out_md:
        with open(args.out_md, "w") as f:
            f.write(md)
    if args.out_json:
        def clean(o):  # JSON has no NaN
            if isinstance(o, float) and not math.isfinite(o):
                return None
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, list):
                return [clean(v) for v in o]
            return o
        with open(args.out_json, "w") as f:
            json.dump(clean({"meta": meta, "models": entries}), f, indent=1)
    if T is None and args.device == "cuda":
        failed = True  # the comparison this script exists for did not happen
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
