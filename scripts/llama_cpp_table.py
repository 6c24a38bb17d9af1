#!/usr/bin/python3
"""The table of scripts/llama_cpp_sweep.sh: for every dtype and prompt length, the medians over the rounds of ptk's
and llama.cpp's prefill and decode tokens/s, their ratio (ptk / llama.cpp, of the medians) with the range of the
per-round ratios, each side's peak resident memory, and how many of the greedy tokens agree (before the first
difference, first round). Exits 1 when an f32 row disagrees: the same weights and types must give the same tokens.
usage: llama_cpp_table.py OUT ROUNDS "DTYPES" "PROMPTS"   (reads OUT/{ptk,llama}.<dtype>.<prompt>.<round>.{txt,ids})
"""
import os
import re
import statistics
import sys

LINE = re.compile(r"prefill: (\d+) tokens in [0-9.]+ ms \(([0-9.]+) tokens/s\); decode: (\d+) tokens in [0-9.]+ ms "
                  r"\(([0-9.]+) tokens/s\).*peak resident memory ([0-9.]+ [KMG]iB)")


def measure(out, engine, dtype, prompt, r):
    with open(os.path.join(out, "%s.%s.%s.%d.txt" % (engine, dtype, prompt, r))) as f:
        text = f.read()
    m = LINE.search(text)
    if not m:
        sys.exit("llama_cpp_table: %s %s %s round %d printed no speeds: %s" % (engine, dtype, prompt, r, text.strip()))
    return float(m.group(2)), float(m.group(4)), m.group(5)


def ids(out, engine, dtype, prompt):
    with open(os.path.join(out, "%s.%s.%s.1.ids" % (engine, dtype, prompt))) as f:
        return f.read().split()


def main(out, rounds, dtypes, prompts):
    print("| dtype | prompt | ptk prefill tok/s | llama.cpp | ratio (rounds) | ptk decode tok/s | llama.cpp "
          "| ratio (rounds) | greedy tokens equal | peak memory ptk / llama.cpp |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    disagree = []
    for dtype in dtypes:
        for prompt in prompts:
            ptk = [measure(out, "ptk", dtype, prompt, r) for r in range(1, rounds + 1)]
            llama = [measure(out, "llama", dtype, prompt, r) for r in range(1, rounds + 1)]
            cells = []
            for k in (0, 1):
                mine = statistics.median(x[k] for x in ptk)
                theirs = statistics.median(x[k] for x in llama)
                each = [a[k] / b[k] for a, b in zip(ptk, llama)]
                cells += ["%.1f" % mine, "%.1f" % theirs,
                          "%.2f (%.2f-%.2f)" % (mine / theirs, min(each), max(each))]
            a, b = ids(out, "ptk", dtype, prompt), ids(out, "llama", dtype, prompt)
            same = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            if dtype == "f32" and (same != len(a) or len(a) != len(b)):
                disagree.append("%s at %s tokens: first difference at new token %d" % (dtype, prompt, same))
            print("| %s | %s | %s | %d / %d | %s / %s |" % (dtype, prompt, " | ".join(cells), same, len(a),
                                                            ptk[0][2], llama[0][2]))
    for line in disagree:
        print("**F32 disagrees**: " + line)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()))
