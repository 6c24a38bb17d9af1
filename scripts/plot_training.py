#!/usr/bin/python3
"""Plot a training log written by ``ptk train --log FILE``.

The log is JSON Lines: one object per optimizer step, e.g.

    {"step": 12, "loss": 2.4817, "lr": 0.002, "grad_norm": 0.83, "ms": 41.2,
     "tokens_per_s": 24850, "elapsed_s": 0.51}

with an extra ``"val_loss": 2.51`` on steps where the validation set was
evaluated.  The first line may instead be a run header, ``{"run": {...}}``
(id, data, layers, width, block, batch, start_step, ...); objects without a
"step" key are skipped, but a header's "run" dict gives the plot title, and a
header with start_step > 0 (a resumed run) is marked by a dashed line.  A run that was
interrupted and resumed appends to the same file, so a step can appear more
than once: the last record of each step wins, and steps are sorted.  Blank
lines are ignored; a malformed line, an empty log or a missing file is
refused with one line on stderr and exit status 2.

Usage: scripts/plot_training.py LOG [-o OUT.png] [--smooth N]

Draws training loss per step with a moving average over N steps (default
max(1, steps // 50); 1 means none), validation loss as markers, and the
learning rate in a small subplot below.  Standard library plus matplotlib.
"""
import argparse
import json
import sys
from pathlib import Path

PROG = "plot_training.py"


class LogError(Exception):
    """A log that cannot be plotted; the message is the one line to print."""


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def read_log(path):
    """Return (run header dict or None, sorted list of step records, steps where a resumed run started)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise LogError(f"cannot read {path}: {e.strerror or e}")
    header, by_step, resumes = None, {}, []
    for n, line in enumerate(raw.split(b"\n"), 1):
        try:
            text = line.decode("utf-8").strip()
            if not text:
                continue
            obj = json.loads(text)
        except (UnicodeDecodeError, ValueError) as e:
            raise LogError(f"{path}:{n}: malformed line ({str(e).splitlines()[0]})")
        if not isinstance(obj, dict):
            raise LogError(f"{path}:{n}: malformed line (not a JSON object)")
        if "step" not in obj:
            if isinstance(obj.get("run"), dict):
                header = obj["run"]
                start = header.get("start_step")
                if is_number(start) and start > 0:
                    resumes.append(start)
            continue
        step, loss = obj["step"], obj.get("loss")
        if not (isinstance(step, int) and not isinstance(step, bool)) or not is_number(loss):
            raise LogError(f"{path}:{n}: malformed line (needs an integer \"step\" and a numeric \"loss\")")
        for key in ("lr", "val_loss"):
            if key in obj and not is_number(obj[key]):
                raise LogError(f"{path}:{n}: malformed line (\"{key}\" is not a number)")
        by_step[step] = obj  # a resumed run's record replaces the earlier one
    if not by_step:
        raise LogError(f"{path}: no step records")
    return header, [by_step[s] for s in sorted(by_step)], resumes


def moving_average(values, n):
    """Trailing mean over the last n values (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= n:
            total -= values[i - n]
        out.append(total / min(i + 1, n))
    return out


def title_of(header):
    if not header:
        return None
    parts = [f"{header[k]} {k}" if k in ("layers", "heads") else f"{k} {header[k]}"
             for k in ("layers", "heads", "width", "block", "batch") if k in header]
    if header.get("data"):
        parts.append(f"data {Path(str(header['data'])).name}")
    if not parts and header.get("id"):
        parts.append(f"run {header['id']}")
    return ", ".join(parts) or None


def plot(header, records, resumes, out, smooth):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in records]
    loss = [float(r["loss"]) for r in records]
    val = [(r["step"], float(r["val_loss"])) for r in records if "val_loss" in r]
    lr = [(r["step"], float(r["lr"])) for r in records if "lr" in r]

    fig, (ax, ax_lr) = plt.subplots(2, 1, figsize=(9, 6), sharex=True,
                                    gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(steps, loss, lw=0.7, alpha=0.45, color="tab:blue", label="train loss")
    if smooth > 1:
        ax.plot(steps, moving_average(loss, smooth), lw=2, color="tab:blue",
                label=f"train loss, mean of {smooth} steps")
    if val:
        ax.plot(*zip(*val), "o-", ms=4, lw=1.2, color="tab:orange", label="validation loss")
    for i, step in enumerate(resumes):
        for a in (ax, ax_lr):
            a.axvline(step, ls="--", lw=1, color="gray",
                      label=f"resumed at step {step}" if a is ax and i < 3 else None)
    ax.set_ylabel("cross-entropy loss (nats)")
    ax.legend()
    if title_of(header):
        ax.set_title(title_of(header))
    if lr:
        ax_lr.plot(*zip(*lr), lw=1, color="tab:green")
    ax_lr.set(xlabel="step", ylabel="learning rate")
    ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    for a in (ax, ax_lr):
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return val


def main():
    p = argparse.ArgumentParser(prog=PROG, description="Plot a ptk train --log file.")
    p.add_argument("log", help="JSON Lines log from ptk train --log")
    p.add_argument("-o", "--out", help="output PNG (default: LOG with extension .png)")
    p.add_argument("--smooth", type=int, metavar="N",
                   help="moving-average window in steps (default max(1, steps//50); 1 = none)")
    args = p.parse_args()
    if args.smooth is not None and args.smooth < 1:
        p.error("--smooth must be at least 1")
    out = Path(args.out) if args.out else Path(args.log).with_suffix(".png")
    if out == Path(args.log):
        out = Path(args.log + ".png")
    try:
        header, records, resumes = read_log(args.log)
        smooth = args.smooth or max(1, len(records) // 50)
        val = plot(header, records, resumes, out, smooth)
    except LogError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{PROG}: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    first, last = records[0]["step"], records[-1]["step"]
    tail = (f"{len(val)} validation points, last val loss {val[-1][1]:.4f}" if val
            else "no validation points")
    marks = "".join(f", resumed at step {s}" for s in resumes)
    print(f"wrote {out}: {len(records)} steps ({first}..{last}), {tail}{marks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
