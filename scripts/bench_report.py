#!/usr/bin/env python3
"""Turn Google Benchmark JSON files from the ptk benchmarks into a report.

Benchmarks are expected to be named <family>/<impl>/<shape>, e.g.
``matmul/ptk/M=1024,N=1024,K=1024`` or ``softmax/onednn/rows=4096,cols=1024``,
each carrying one rate counter ("GFLOP/s" or "GB/s").  Impls starting with
"ptk" are ptk's own; every other impl is a comparison, and the plain ``ptk``
impl is divided by each of them (ratio > 1 means ptk is faster).

Usage:
    build/cpu/ptk bench [--quick] [--out DIR]      (runs the sweeps, then this script)
    /usr/bin/python3 scripts/bench_report.py A.json [B.json ...] --out DIR [--merged M.json] [--title TEXT]

Several inputs (``ptk bench`` runs each implementation in its own process and
writes one file each) are merged: their benchmarks are pooled, the first file's
context is kept, and --merged writes the pooled file.

Writes DIR/report.md (context, one table per family, geometric-mean summary,
skipped entries) and DIR/<family>.png (rate vs shape; needs matplotlib, else
the plots are left out with a note), and prints the tables to stdout.
Standard library only, plus matplotlib for the plots.
"""
import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

RATE_COUNTERS = ("GFLOP/s", "GB/s")
CONTEXT_KEYS = ("host_name", "num_cpus", "mhz_per_cpu", "library_build_type", "date",
                "cpu_scaling_enabled", "load_avg")
# Google Benchmark's own context keys that are not worth showing.
GBENCH_KEYS = {"executable", "caches", "json_schema_version", "library_version"}
NAME_SUFFIXES = {"real_time", "process_time", "manual_time"}
DASH = "—"


def fmt3(x):
    """Format to 3 significant figures without exponent notation (1230, 1.05, 0.0312)."""
    if x is None or not math.isfinite(x):
        return DASH if x is None else str(x)
    if x == 0:
        return "0"
    digits = 2 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):.{max(digits, 0)}f}"


def base_name(b):
    """Benchmark name without aggregate and '/real_time', '/iterations:10', ... suffixes."""
    name = b.get("run_name") or b.get("name", "")
    agg = b.get("aggregate_name")
    if b.get("run_type") == "aggregate" and not b.get("run_name") and agg and name.endswith("_" + agg):
        name = name[: -len(agg) - 1]
    parts = name.split("/")
    while parts and (":" in parts[-1] or parts[-1] in NAME_SUFFIXES):
        parts.pop()
    return "/".join(parts)


def collect(benchmarks):
    """Return ({(family, impl, shape): (rate, unit)} in first-seen order, {name: reason})."""
    samples, skipped = {}, {}
    for b in benchmarks:
        if not isinstance(b, dict):
            skipped[repr(b)[:60]] = "not a benchmark object"
            continue
        name = base_name(b)
        if b.get("error_occurred"):
            skipped[name] = "error: " + str(b.get("error_message", "(no message)"))
            continue
        parts = name.split("/", 2)
        if len(parts) != 3 or not all(parts):
            skipped[name] = "name is not <family>/<impl>/<shape>"
            continue
        unit = next((c for c in RATE_COUNTERS if isinstance(b.get(c), (int, float))), None)
        if unit is None:
            skipped[name] = "no GFLOP/s or GB/s counter"
            continue
        kind = b.get("aggregate_name", "?") if b.get("run_type") == "aggregate" else "iteration"
        if kind in ("median", "iteration", "mean"):
            samples.setdefault(tuple(parts), {}).setdefault(kind, []).append((float(b[unit]), unit))
    results = {}
    for key, kinds in samples.items():
        # Prefer the median aggregate, then (the median of) the iterations, then the mean.
        vals = next(kinds[k] for k in ("median", "iteration", "mean") if k in kinds)
        results[key] = (statistics.median(v for v, _ in vals), vals[0][1])
    for key in results:  # a benchmark that also succeeded somewhere is not "skipped"
        skipped.pop("/".join(key), None)
    return results, skipped


def build_tables(results):
    """Group results per family: {family: (shapes, impls, comparisons, {(impl, shape): (rate, unit)})}."""
    fams = {}
    for (fam, impl, shape), val in results.items():
        shapes, impls, cells = fams.setdefault(fam, ([], [], {}))
        if shape not in shapes:
            shapes.append(shape)
        if impl not in impls:
            impls.append(impl)
        cells[(impl, shape)] = val
    out = {}
    for fam, (shapes, impls, cells) in fams.items():
        own = sorted((i for i in impls if i.startswith("ptk")), key=lambda i: (i != "ptk", impls.index(i)))
        cmps = [i for i in impls if not i.startswith("ptk")]
        out[fam] = (shapes, own + cmps, cmps if "ptk" in impls else [], cells)
    return out


def ratio(cells, shape, other):
    a, b = cells.get(("ptk", shape)), cells.get((other, shape))
    if a and b and a[1] == b[1] and b[0] > 0:
        return a[0] / b[0]
    return None


def unit_of(cells, impl):
    return next((u for (i, _), (_, u) in cells.items() if i == impl), "")


def family_markdown(fam, table):
    shapes, impls, cmps, cells = table
    head = ["shape"] + [f"{i} ({unit_of(cells, i)})" for i in impls] + [f"ptk / {c}" for c in cmps]
    lines = [f"### {fam}", "", "| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for s in shapes:
        row = [s.replace("|", "\\|")]
        row += [fmt3(cells[(i, s)][0]) if (i, s) in cells else DASH for i in impls]
        row += [fmt3(ratio(cells, s, c)) for c in cmps]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def geomean_lines(tables):
    lines = []
    for fam, (shapes, _, cmps, cells) in tables.items():
        for c in cmps:
            rs = [r for r in (ratio(cells, s, c) for s in shapes) if r and math.isfinite(r)]
            if rs:
                g = math.exp(sum(map(math.log, rs)) / len(rs))
                verdict = "ptk faster" if g > 1 else "ptk slower" if g < 1 else "even"
                lines.append(f"- {fam}: ptk / {c} geomean = {fmt3(g)} over {len(rs)} "
                             f"shape{'s' * (len(rs) != 1)} ({verdict})")
            else:
                lines.append(f"- {fam}: ptk / {c}: no shape with both results")
    return lines


def plot_family(plt, fam, table, path):
    shapes, impls, _, cells = table
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=100)
    x = range(len(shapes))
    rates = []
    for impl in impls:
        ys = [cells[(impl, s)][0] if (impl, s) in cells else math.nan for s in shapes]
        rates += [y for y in ys if y > 0]
        ax.plot(x, ys, marker="o", linewidth=2.5 if impl == "ptk" else 1.5, label=impl)
    if rates and max(rates) > 20 * min(rates):
        ax.set_yscale("log")
    units = sorted({u for _, u in cells.values()})
    ax.set_xticks(list(x))
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=9)
    ax.set_xlabel("shape")
    ax.set_ylabel(f"rate ({', '.join(units)}, higher is better)")
    ax.set_title(f"{fam}: rate per shape")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def die(msg):
    print(f"bench_report.py: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+", help="Google Benchmark JSON output file(s)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--merged", help="write the pooled benchmarks of all inputs to this JSON file")
    ap.add_argument("--title", default="ptk benchmark report")
    args = ap.parse_args()

    ctx, benchmarks = None, []
    for path in args.json:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as e:
            die(f"cannot read {path}: {e.strerror or e}")
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            die(f"{path} is not valid JSON: {e}")
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
            die(f"{path} is not Google Benchmark JSON (no 'benchmarks' list)")
        if ctx is None:
            ctx = data.get("context") if isinstance(data.get("context"), dict) else {}
        benchmarks += data["benchmarks"]
    if len(args.json) > 1:
        ctx = dict(ctx, ptk_processes="one per implementation")
    if args.merged:
        Path(args.merged).write_text(json.dumps({"context": ctx, "benchmarks": benchmarks}, indent=1))
    source = ", ".join(f"`{p}`" for p in args.json)

    results, skipped = collect(benchmarks)
    tables = build_tables(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # keep going without plots
        plt = None
        no_plot = f"Plots not generated: matplotlib is not importable ({e})."
        print(f"bench_report.py: {no_plot}", file=sys.stderr)

    md = [f"# {args.title}", "", f"Source: {source}", "", "## Machine", ""]
    extra = [k for k in ctx if k not in CONTEXT_KEYS and k not in GBENCH_KEYS]
    for k in [k for k in CONTEXT_KEYS if k in ctx] + extra:
        v = ctx[k]
        md.append(f"- {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
    md += ["", "## How to read", "",
           "Rates are as reported by Google Benchmark (the median aggregate when repetitions "
           "were run); higher is better. A `ptk / <impl>` column is ptk's rate divided by that "
           "impl's rate on the same shape: above 1 means ptk is faster. `memcpy` rows are a "
           "bandwidth ceiling, not a competitor. Each implementation ran in its own process "
           "(no thread pool competes with another's), warmed up. The machine may be shared "
           "and noisy, so compare numbers within one run rather than across runs.", ""]
    text = []
    for fam, table in tables.items():
        text += [family_markdown(fam, table), ""]
        if plt:
            png = out / (re.sub(r"[^\w.-]", "_", fam) + ".png")
            plot_family(plt, fam, table, png)
            text += [f"![{fam}]({png.name})", ""]
    summary = ["## Geometric-mean summary", ""] + (geomean_lines(tables) or ["- no comparisons"])
    md += ["## Results", ""] + (text or ["No usable benchmarks.", ""]) + summary + [""]
    if not plt:
        md += [f"_{no_plot}_", ""]
    if skipped:
        md += ["## Skipped", "", "| benchmark | reason |", "|---|---|"]
        md += [f"| `{n}` | {r.replace('|', '/')} |" for n, r in skipped.items()] + [""]
    (out / "report.md").write_text("\n".join(md))

    print("\n".join(t for t in text if not t.startswith("![")))
    print("\n".join(summary))
    if skipped:
        print(f"\nSkipped {len(skipped)}: " + "; ".join(f"{n} ({r})" for n, r in skipped.items()))
    print(f"bench_report.py: wrote {out / 'report.md'}"
          + (f" and {len(tables)} plot(s)" if plt else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
