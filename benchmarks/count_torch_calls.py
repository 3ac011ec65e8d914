"""The torch calls one short solve makes (bench_overhead.py's short row: batch 1, [0, 0.3], 26
evaluations), the field's and the solver's: a count, so it does not depend on the machine's load
(each call costs a few microseconds at batch 1, which is what the short solve's overhead is made of).

    PYTHONPATH=. python benchmarks/count_torch_calls.py
"""

import collections
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

import nodecourse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dopri5 import MLPField  # noqa: E402 (the benchmarks folder is not a package)

#: Calls that read a tensor's attributes (``shape``, ``dtype``, ``_version``, ... through ``__get__``) and
#: launch no kernel: counted, but apart from the tensor operations.
ATTRIBUTE_READS = frozenset({"__get__", "numel", "dim", "is_floating_point"})


class CountTorchCalls(TorchFunctionMode):
    """Counts every torch function called inside the ``with`` block, by name."""

    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


def main() -> None:
    torch.manual_seed(0)
    field = MLPField()
    y0 = torch.randn(1, 16, generator=torch.Generator().manual_seed(0))
    t = torch.tensor([0.0, 0.3])
    with torch.no_grad():
        nodecourse.odeint(field, y0, t, rtol=1e-5, atol=1e-7)  # warm-up: cached checks and plans
        solve_calls = CountTorchCalls()
        with solve_calls:
            sol = nodecourse.odeint(field, y0, t, rtol=1e-5, atol=1e-7)
        field_calls = CountTorchCalls()
        with field_calls:
            field(t[0], y0)
    by_field = sum(field_calls.calls.values()) * sol.stats["nfe"]
    total = sum(solve_calls.calls.values())
    per_field = collections.Counter({name: n * sol.stats["nfe"] for name, n in field_calls.calls.items()})
    solver_calls = solve_calls.calls - per_field
    kernels = sum(v for k, v in solver_calls.items() if k not in ATTRIBUTE_READS)
    print(
        f"nfe {sol.stats['nfe']}, torch calls per solve {total}, of which the field's {by_field}, "
        f"the solver's {total - by_field} ({kernels} tensor operations, the rest attribute reads); "
        f"most called: {solve_calls.calls.most_common(40)}"
    )


if __name__ == "__main__":
    main()
