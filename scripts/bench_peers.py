#!/usr/bin/env python3
"""Times thunderc against its peers on the CPU: ONNX Runtime, torch.compile (Inductor) and TorchScript-frozen.

Run through scripts/bench_peers.sh, which makes the venv (PyPI torch, torchvision, onnxruntime, onnx, onnxscript);
or directly with such a venv's python from the repository root:

    VENV/bin/python scripts/bench_peers.py [--only NAME,...] [--threads "1 2"] [--iterations 50] [--warmup 10]
        [--rounds 3] [--workdir DIR] [--thunderc PATH] [--executors LIST] [--json-out FILE] [--list]

Models: the samples (mlp, cnn, gpt_block and encoder_layer as samples/make_samples.py builds them, llama_block as
samples/export_samples.py does) and the real models of scripts/make_real_models.py (random weights, eval mode),
each built from its eager definition with the same seeds, weights and input as those scripts. For each model:
torch.export -> WORKDIR/NAME.pt2 (compiled by thunderc), the same ExportedProgram -> WORKDIR/NAME.onnx
(torch.onnx.export, dynamo exporter; the TorchScript exporter if that fails), and WORKDIR/NAME.input.npy. The
exports are cached in WORKDIR (delete it to export afresh); the thunderc .so is compiled on every run.

Runners, at each thread count N (all medians of timed calls after --warmup untimed ones; see Rounds):
  thunderc       `thunderc bench X.so --threads N --json` (its own process; random inputs of the same shape)
  ORT            onnxruntime CPUExecutionProvider, intra_op_num_threads=N, inter_op_num_threads=1, all graph
                 optimizations, called through an IO binding (the input bound once)
  torch.compile  torch.compile(model) (Inductor, default mode) compiled after torch.set_num_threads(N): Inductor
                 bakes the thread count into its C++ kernels, so it is compiled again for each N
  TorchScript    torch.jit.trace (with autograd on, as make_real_models.py traces: the decomposed graph, not the
                 fused attention fast path) + torch.jit.freeze, torch.set_num_threads(N)
The Python runners time one call each with time.perf_counter, under torch.no_grad(), on the model's input; their
times include the Python call (some 10 us for ORT, more for torch.compile's guards), which weighs on the samples
whose thunderc time is a few microseconds: thunderc's loop is in C++.

Rounds: each runner is prepared (compiled, loaded, its output checked) once per thread count, then timed in
--rounds rounds (default 3) of --iterations / rounds calls each (rounded up), the runners taking turns: round 1
in the order above, round 2 reversed, and so on. A runner's time is the median of its round medians (min: the
least of its rounds' minimums; p90: the median of their p90s). On a shared VM whose speed moves by 10-40% from
minute to minute, a slow spell then lands on every runner of a round instead of on whichever ran during it;
--rounds 1 times each runner in one go, as before.

Correctness: every runner's output on NAME.input.npy (thunderc through `thunderc run --threads N`) is compared
with eager PyTorch's; a runner passes when max |out - eager| <= 1e-3 * max(1, max |eager|). The table shows the
largest difference over the runners, and names each runner that is over that tolerance (its time is then left
out of the geomean). A runner that fails shows "fail", with the reason on stderr; the run goes on.

Ratios are peer median / thunderc median: above 1 thunderc is faster. stdout gets the markdown table and one
line naming the machine and the versions; --json-out FILE gets every measurement.
"""
import argparse
import contextlib
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

if os.environ.get("PYTHONHASHSEED") != "0":  # as the sample scripts: they re-exec themselves otherwise on import
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "samples"), os.path.join(ROOT, "scripts")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

RUNNERS = ["thunderc", "ort", "compile", "ts"]
LABEL = {"thunderc": "thunderc", "ort": "ORT", "compile": "torch.compile", "ts": "TorchScript"}
RTOL_MAG = 1e-3  # tolerance: max abs diff <= 1e-3 * max(1, max |eager output|)


def log(msg):
    print(f"bench_peers: {msg}", file=sys.stderr, flush=True)


def first_line(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


# --------------------------------------------------------------------------- models

def sample_models():
    """name -> builder returning (eager module, input), as the sample scripts build them."""
    import make_samples as ms

    def from_make_samples(cls, shape):
        return lambda: (ms.build(cls), ms.example(shape))

    def llama_block():
        import export_samples as es
        torch.manual_seed(5)
        model = es.LlamaBlock().eval()
        return model, torch.randn(2, 12, 32)

    return {
        "mlp": from_make_samples(ms.MLP, (1, 64)),
        "cnn": from_make_samples(ms.SmallCNN, (1, 3, 32, 32)),
        "gpt_block": from_make_samples(ms.GPTBlock, (1, 16, 64)),
        "encoder_layer": from_make_samples(ms.EncoderLayer, (2, 12, 32)),
        "llama_block": llama_block,
    }


def real_models():
    """name -> builder: scripts/make_real_models.py's build_model (the same weights and input it exports)."""
    import make_real_models as mrm

    return {name: (lambda c=ctor, s=shape: mrm.build_model(c, s)) for name, (ctor, shape) in mrm.MODELS.items()}


def all_models():
    models = sample_models()
    models.update(real_models())
    return models


# --------------------------------------------------------------------------- exports (cached in the workdir)

def export_pt2(model, x, path):
    """torch.export -> path (written beside and renamed, so an interrupted run leaves no half file)."""
    if os.path.exists(path):
        return torch.export.load(path), True
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (x,))
    # Saved under its own name in a scratch folder (the archive's top folder is named after the file), then moved.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        torch.export.save(ep, os.path.join(tmp, os.path.basename(path)))
        os.replace(os.path.join(tmp, os.path.basename(path)), path)
    return ep, False


def export_onnx(model, ep, x, path):
    """The same ExportedProgram through the dynamo exporter (onnxscript); the TorchScript exporter if that fails.
    Returns how it was exported."""
    if os.path.exists(path):
        return "cached"
    tmp = path + ".tmp.onnx"
    errors = []
    attempts = [("dynamo", lambda: torch.onnx.export(ep, (x,), tmp, dynamo=True, external_data=False,
                                                        input_names=["x"])),
                ("torchscript", lambda: torch.onnx.export(model, (x,), tmp, dynamo=False, input_names=["x"]))]
    for how, attempt in attempts:
        try:
            # The exporter prints its progress on stdout, which has the table.
            with warnings.catch_warnings(), torch.no_grad(), contextlib.redirect_stdout(sys.stderr):
                warnings.simplefilter("ignore")
                attempt()
            os.replace(tmp, path)
            return how
        except Exception as e:
            errors.append(f"{how} exporter: {first_line(e)}")
    raise RuntimeError("; ".join(errors))


# --------------------------------------------------------------------------- timing

def time_calls(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return {"median_ms": statistics.median(times), "min_ms": times[0],
            "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))]}


def as_arrays(out):
    if isinstance(out, torch.Tensor):
        return [out.detach().numpy()]
    if isinstance(out, np.ndarray):
        return [out]
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in as_arrays(o)]
    raise TypeError(f"unexpected output type {type(out).__name__}")


def max_abs_diff(got, want):
    got, want = as_arrays(got), as_arrays(want)
    if len(got) != len(want):
        raise RuntimeError(f"{len(got)} outputs, eager has {len(want)}")
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            raise RuntimeError(f"output shape {list(g.shape)}, eager has {list(w.shape)}")
        d = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if w.size else 0.0
        worst = max(worst, d if not math.isnan(d) else math.inf)
    return worst


def run_thunderc(args, so, x_path, threads, outdir):
    """Output on the model's input (`thunderc run`), and a timer of `calls` calls (`thunderc bench`)."""
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        os.remove(os.path.join(outdir, f))
    run = subprocess.run([args.thunderc, "run", so, x_path, "--threads", str(threads), "--output-dir", outdir],
                         capture_output=True, text=True, timeout=args.timeout)
    if run.returncode != 0:
        raise RuntimeError("thunderc run: " + (run.stderr.strip() or run.stdout.strip()).splitlines()[-1])
    outputs = sorted((f for f in os.listdir(outdir) if f.startswith("output") and f.endswith(".npy")),
                     key=lambda f: int(f[len("output"):-len(".npy")]))
    got = [np.load(os.path.join(outdir, f)) for f in outputs]

    def timer(calls):
        bench = subprocess.run([args.thunderc, "bench", so, "--threads", str(threads), "--warmup", str(args.warmup),
                                "--iterations", str(calls), "--json"],
                               capture_output=True, text=True, timeout=args.timeout)
        if bench.returncode != 0:
            raise RuntimeError("thunderc bench: " + (bench.stderr.strip() or bench.stdout.strip()).splitlines()[-1])
        result = json.loads(bench.stdout)
        return {k: result[k] for k in ("median_ms", "min_ms", "p90_ms")}
    return got, timer


def calls_per_round(args):
    return -(-args.iterations // args.rounds)


def no_grad_timer(fn, warmup):
    """A timer(calls) of fn() under torch.no_grad()."""
    def timer(calls):
        with torch.no_grad():
            return time_calls(fn, warmup, calls)
    return timer


def combine_rounds(rounds):
    """One runner's time from its rounds' (see Rounds in the docstring)."""
    return {"median_ms": statistics.median(r["median_ms"] for r in rounds),
            "min_ms": min(r["min_ms"] for r in rounds),
            "p90_ms": statistics.median(r["p90_ms"] for r in rounds),
            "round_medians_ms": [r["median_ms"] for r in rounds]}


# --------------------------------------------------------------------------- one model

def bench_model(name, build, args):
    """Returns one record per thread count."""
    import onnxruntime as ort

    work = args.workdir
    torch.set_num_threads(max(args.threads))
    model, x = build()
    model.eval()
    with torch.no_grad():
        eager = model(x)
    x_path = os.path.join(work, name + ".input.npy")
    np.save(x_path, x.numpy())
    info = {"input_shape": list(x.shape), "exports": {}}
    failures = {}  # runner -> reason, for every thread count

    # (a) torch.export -> .pt2 -> thunderc; (b) ONNX
    pt2, ep = os.path.join(work, name + ".pt2"), None
    try:
        t0 = time.time()
        ep, cached = export_pt2(model, x, pt2)
        info["exports"]["pt2"] = "cached" if cached else f"{time.time() - t0:.1f} s"
    except Exception as e:
        failures["thunderc"] = f"torch.export: {first_line(e)}"
    so = os.path.join(work, "so", name + ".so")
    if "thunderc" not in failures:
        os.makedirs(os.path.dirname(so), exist_ok=True)
        cmd = [args.thunderc, pt2, "-o", so] + (["--executors", args.executors] if args.executors else [])
        t0 = time.time()
        try:
            c = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            if c.returncode != 0:
                failures["thunderc"] = "compile: " + " ".join((c.stderr.strip() or c.stdout.strip()).splitlines()[:3])
            else:
                info["thunderc_compile_s"] = round(time.time() - t0, 2)
        except subprocess.TimeoutExpired:
            failures["thunderc"] = f"compile: timed out after {args.timeout} s"
    onnx_path = os.path.join(work, name + ".onnx")
    try:
        t0 = time.time()
        if ep is None and not os.path.exists(onnx_path):
            raise RuntimeError("no ExportedProgram (torch.export failed)")
        how = export_onnx(model, ep, x, onnx_path)
        info["exports"]["onnx"] = how if how == "cached" else f"{how} exporter, {time.time() - t0:.1f} s"
    except Exception as e:
        failures["ort"] = f"ONNX export: {first_line(e)}"
    del ep

    # (d) TorchScript-frozen: traced once (the thread count is a runtime setting)
    ts = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = torch.jit.freeze(torch.jit.trace(model, x, check_trace=False).eval())
    except Exception as e:
        failures["ts"] = f"trace/freeze: {first_line(e)}"

    records = []
    for n in args.threads:
        rec = {"model": name, "threads": n, **info, "times": {}, "diffs": {}, "failures": dict(failures)}
        torch.set_num_threads(n)

        timers = {}  # runner -> timer(calls) -> {median_ms, min_ms, p90_ms}

        def attempt(runner, fn):
            """Prepares a runner: fn() returns its output on the input and its timer."""
            if runner in rec["failures"]:
                return
            try:
                got, timer = fn()
                rec["diffs"][runner] = max_abs_diff(got, eager)
                timers[runner] = timer
            except Exception as e:
                rec["failures"][runner] = first_line(e)
                if args.verbose:
                    traceback.print_exc()

        attempt("thunderc", lambda: run_thunderc(args, so, x_path, n, os.path.join(work, "out", name)))

        def ort_runner():
            so_ = ort.SessionOptions()
            so_.intra_op_num_threads = n
            so_.inter_op_num_threads = 1
            so_.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so_.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(onnx_path, so_, providers=["CPUExecutionProvider"])
            # IO binding: the input bound once, outputs allocated by ORT on each call; half the Python overhead
            # of sess.run(), which matters on the microsecond-scale samples.
            binding = sess.io_binding()
            binding.bind_cpu_input(sess.get_inputs()[0].name, x.numpy())
            for o in sess.get_outputs():
                binding.bind_output(o.name, "cpu")
            sess.run_with_iobinding(binding)
            got = binding.copy_outputs_to_cpu()
            return got, lambda calls: time_calls(lambda: sess.run_with_iobinding(binding), args.warmup, calls)
        attempt("ort", ort_runner)

        def compile_runner():
            torch._dynamo.reset()
            compiled = torch.compile(model)
            t0 = time.time()
            with torch.no_grad():
                got = compiled(x)
            rec["compile_s"] = round(time.time() - t0, 2)
            return got, no_grad_timer(lambda: compiled(x), args.warmup)
        attempt("compile", compile_runner)

        def ts_runner():
            with torch.no_grad():
                got = ts(x)
            return got, no_grad_timer(lambda: ts(x), args.warmup)
        attempt("ts", ts_runner)

        calls = calls_per_round(args)
        rounds = {r: [] for r in timers}
        for k in range(args.rounds):
            for r in (RUNNERS if k % 2 == 0 else RUNNERS[::-1]):
                if r not in timers or r in rec["failures"]:
                    continue
                try:
                    rounds[r].append(timers[r](calls))
                except Exception as e:
                    rec["failures"][r] = first_line(e)
                    if args.verbose:
                        traceback.print_exc()
        for r, done in rounds.items():
            if r not in rec["failures"]:
                rec["times"][r] = combine_rounds(done)

        rec["eager_max_abs"] = float(max(np.max(np.abs(a)) for a in as_arrays(eager)))
        rec["tolerance"] = tol = RTOL_MAG * max(1.0, rec["eager_max_abs"])
        rec["over_tolerance"] = [r for r, d in rec["diffs"].items() if not d <= tol]
        for r, reason in rec["failures"].items():
            if r not in failures or n == args.threads[0]:  # a failure common to every thread count: once
                log(f"{name} @{n}: {LABEL[r]} failed: {reason}")
        for r in rec["over_tolerance"]:
            log(f"{name} @{n}: {LABEL[r]} output differs from eager by {rec['diffs'][r]:.3g} (tolerance {tol:.3g})")
        records.append(rec)
        print_row(rec)
    torch._dynamo.reset()
    return records


# --------------------------------------------------------------------------- output

def fmt_ms(v):
    return f"{v:.3g}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def ratio(rec, runner):
    """peer median / thunderc median, or None; both must have run and matched eager."""
    t = rec["times"]
    ok = lambda r: r in t and r not in rec["over_tolerance"]  # noqa: E731
    if ok("thunderc") and ok(runner) and t["thunderc"]["median_ms"] > 0:
        return t[runner]["median_ms"] / t["thunderc"]["median_ms"]
    return None


HEADER = ("| model | threads | thunderc ms | ORT ms | torch.compile ms | TorchScript ms | ORT/thunderc "
          "| compile/thunderc | TS/thunderc | max abs diff |\n|---|---|---|---|---|---|---|---|---|---|")


def print_row(rec):
    cells = [rec["model"], str(rec["threads"])]
    for r in RUNNERS:
        cells.append(fmt_ms(rec["times"][r]["median_ms"]) if r in rec["times"] else "fail")
    for r in RUNNERS[1:]:
        q = ratio(rec, r)
        cells.append(f"{q:.2f}×" if q is not None else "–")
    diffs = rec["diffs"]
    cell = f"{max(diffs.values()):.1e}" if diffs else "–"
    if rec["over_tolerance"]:
        cell += " (over tol: " + ", ".join(f"{LABEL[r]} {diffs[r]:.1e}" for r in rec["over_tolerance"]) + ")"
    cells.append(cell)
    print("| " + " | ".join(cells) + " |", flush=True)


def geomeans(records, threads):
    out = {}
    for n in threads:
        for r in RUNNERS[1:]:
            qs = [q for q in (ratio(rec, r) for rec in records if rec["threads"] == n) if q is not None]
            out[f"{r}@{n}"] = {"geomean": math.exp(sum(map(math.log, qs)) / len(qs)) if qs else None,
                               "min": min(qs) if qs else None, "count": len(qs)}
    return out


def print_geomeans(g, threads):
    for n in threads:
        cells = [f"**geomean** (min; models)", str(n), "", "", "", ""]
        for r in RUNNERS[1:]:
            e = g[f"{r}@{n}"]
            cells.append(f"**{e['geomean']:.2f}×** ({e['min']:.2f}; {e['count']})" if e["count"] else "–")
        cells.append("")
        print("| " + " | ".join(cells) + " |", flush=True)


def environment(args):
    import onnxruntime as ort
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        version = subprocess.run([args.thunderc, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        version = "?"
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    return {"cpu": cpu, "cores": os.cpu_count(), "thunderc": version, "commit": commit, "torch": torch.__version__,
            "onnxruntime": ort.__version__, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}


# --------------------------------------------------------------------------- main

def main(argv):
    p = argparse.ArgumentParser(description="thunderc vs ONNX Runtime, torch.compile and TorchScript on the CPU "
                                            "(see the module docstring: scripts/bench_peers.py)")
    p.add_argument("--only", default="", help="comma-separated model names (default: all; --list names them)")
    p.add_argument("--threads", default="1 2", help='thread counts, space- or comma-separated (default "1 2")')
    p.add_argument("--iterations", type=int, default=50, help="timed calls per runner, over all rounds (default 50)")
    p.add_argument("--rounds", type=int, default=3, help="rounds the runners take turns in (default 3)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls first (default 10)")
    p.add_argument("--workdir", default="/tmp/thunderc-bench-peers", help="exports (cached), .so files, outputs")
    p.add_argument("--thunderc", default=os.path.join(ROOT, "build", "bin", "thunderc"))
    p.add_argument("--executors", default="", help="--executors for thunderc's compile (default: its defaults)")
    p.add_argument("--json-out", default="", help="write every measurement to this JSON file")
    p.add_argument("--timeout", type=int, default=1800, help="seconds for one thunderc command (default 1800)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--verbose", action="store_true", help="print the traceback of a failing runner")
    args = p.parse_args(argv)

    models = all_models()
    if args.list:
        print("\n".join(models))
        return 0
    only = [m for m in args.only.replace(",", " ").split() if m]
    unknown = [m for m in only if m not in models]
    if unknown:
        print(f"bench_peers.py: unknown model(s): {' '.join(unknown)}; known: {' '.join(models)}", file=sys.stderr)
        return 2
    try:
        args.threads = [int(t) for t in args.threads.replace(",", " ").split()]
        assert args.threads and all(t > 0 for t in args.threads)
    except (ValueError, AssertionError):
        print(f"bench_peers.py: --threads wants positive integers, got {args.threads!r}", file=sys.stderr)
        return 2
    if args.iterations < 1 or args.warmup < 0 or args.rounds < 1:
        print("bench_peers.py: --iterations and --rounds must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2
    args.thunderc = os.path.abspath(args.thunderc)
    if not os.access(args.thunderc, os.X_OK):
        print(f"bench_peers.py: {args.thunderc} not built (bash scripts/build.sh)", file=sys.stderr)
        return 1
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)

    env = environment(args)
    log(f"{env['cpu']}, {env['cores']} cores; thunderc {env['commit']}, torch {env['torch']}, "
        f"onnxruntime {env['onnxruntime']}; workdir {args.workdir}")
    names = [m for m in models if not only or m in only]
    print(HEADER, flush=True)
    records, start = [], time.time()
    for i, name in enumerate(names, 1):
        log(f"[{i}/{len(names)}] {name}")
        t0 = time.time()
        try:
            records += bench_model(name, models[name], args)
        except Exception as e:  # building the model or its eager run failed: nothing to compare with
            log(f"{name}: skipped: {first_line(e)}")
            if args.verbose:
                traceback.print_exc()
        gc.collect()
        log(f"{name}: {time.time() - t0:.0f} s")
    g = geomeans(records, args.threads)
    print_geomeans(g, args.threads)
    print(f"\nMedians of {args.rounds} rounds' medians of {calls_per_round(args)} calls, each after {args.warmup} warm-up, the runners "
          f"taking turns; ratios are peer / thunderc (above 1: "
          f"thunderc faster). {env['cpu']}; thunderc {env['commit']}"
          f"{' --executors ' + args.executors if args.executors else ''}, torch {env['torch']}, "
          f"onnxruntime {env['onnxruntime']}.")
    log(f"done in {time.time() - start:.0f} s")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"environment": env, "iterations": args.iterations, "rounds": args.rounds, "warmup": args.warmup,
                       "threads": args.threads, "executors": args.executors or None, "tolerance":
                       f"max abs diff <= {RTOL_MAG} * max(1, max |eager output|)", "results": records,
                       "geomeans": g}, f, indent=1)
        log(f"wrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
