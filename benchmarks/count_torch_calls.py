"""The torch calls one short solve makes (bench_overhead.py's short row: batch 1, [0, 0.3], 26
evaluations), the field's and the solver's: a count, so it does not depend on the machine's load
(each call costs a few microseconds at batch 1, which is what the short solve's overhead is made of).

    PYTHONPATH=. python benchmarks/count_torch_calls.py .
"""
import sys, collections, torch
from torch.overrides import TorchFunctionMode
import nodecourse
sys.path.insert(0, (sys.argv[1] if len(sys.argv) > 1 else ".") + "/benchmarks")
from bench_dopri5 import MLPField
torch.manual_seed(0); f = MLPField()
y0 = torch.randn(1, 16, generator=torch.Generator().manual_seed(0)); t = torch.tensor([0.0, 0.3])
class Count(TorchFunctionMode):
    def __init__(self): super().__init__(); self.n = collections.Counter()
    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.n[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))
with torch.no_grad():
    nodecourse.odeint(f, y0, t, rtol=1e-5, atol=1e-7)
    c = Count()
    with c:
        sol = nodecourse.odeint(f, y0, t, rtol=1e-5, atol=1e-7)
    fc = Count()
    with fc:
        f(t[0], y0)
field_calls = sum(fc.n.values()) * sol.stats["nfe"]
total = sum(c.n.values())
print(f"nfe {sol.stats['nfe']}, torch calls per solve {total}, of which the field's {field_calls}, "
      f"the solver's {total - field_calls}; top: {c.n.most_common(40)}")
