"""Peak memory and time of a deep MLP's forward+backward with and without checkpointing.

    python benchmarks/checkpoint_memory.py            # prints one line per mode

Each mode runs in a fresh process (peak RSS is per process): 32 tanh layers of width 256 on a
batch of 4096 in float32 (activations dominate: 8 MiB per saved tensor, 1 MiB of weights per layer), checkpointing every layer (checkpoint) or groups of 4
(checkpoint_sequential), or groups of 4 under a selective policy that saves what tanh saves and
recomputes what matmul saves (selective), against the plain graph.
"""
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np
import lucid
import functools
from lucid.utils.checkpoint import (checkpoint, checkpoint_sequential,
                                    create_selective_checkpoint_contexts)
mode = sys.argv[1]
rng = np.random.default_rng(0)
ws = [lucid.tensor(rng.standard_normal((256, 256)).astype(np.float32) / 16, requires_grad=True)
      for _ in range(32)]
x = lucid.tensor(rng.standard_normal((4096, 256)).astype(np.float32))
layer = lambda w: (lambda h: (h @ w).tanh())
def run():
    h = x
    if mode == "plain":
        for w in ws:
            h = layer(w)(h)
    elif mode == "checkpoint":
        for w in ws:
            h = checkpoint(layer(w), h)
    elif mode == "selective":
        keep_tanh = functools.partial(create_selective_checkpoint_contexts, [lucid.tanh])
        for k in range(0, 32, 4):
            def group(h, k=k):
                for w in ws[k:k + 4]:
                    h = layer(w)(h)
                return h
            h = checkpoint(group, h, context_fn=keep_tanh)
    else:
        h = checkpoint_sequential([layer(w) for w in ws], 8, h)
    (h * h).mean().backward()
run()                                                # warm up
for w in ws:
    w.grad = None
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
run()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"mode": mode, "seconds": seconds, "peak_mib": peak / 1024}))
"""


def main():
    rows = []
    for mode in ("plain", "checkpoint", "sequential", "selective"):
        out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                             check=True)
        rows.append(json.loads(out.stdout))
    plain = rows[0]
    for r in rows:
        print(f"{r['mode']:<11} peak RSS {r['peak_mib']:7.1f} MiB  time {r['seconds']:.3f} s  "
              f"({r['peak_mib'] / plain['peak_mib']:.2f}x memory, "
              f"{r['seconds'] / plain['seconds']:.2f}x time of plain)")


if __name__ == "__main__":
    main()
