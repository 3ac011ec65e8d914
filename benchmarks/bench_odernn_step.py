"""One ODE-RNN training step (forward, backward, Adam step) with its 47 solves by ``nodecourse.odeint``
or by ``torchdiffeq.odeint`` called directly (same field, same weights, same dopri5 settings),
interleaved; the median of 7 steps each after one untimed step.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_odernn_step.py [BATCH]   # default 32
"""
import statistics, sys, time, torch, torchdiffeq
from nodecourse.models.latent import ODERNN, RecurrentEncoder
from nodecourse.solvers.solve_config import SolveConfig
torch.set_num_threads(1); torch.manual_seed(0)
B, K, D, S = int(sys.argv[1]) if len(sys.argv) > 1 else 32, 48, 37, 4
cfg = SolveConfig(method="dopri5", rtol=1e-3, atol=1e-4)
model = ODERNN(D, S, solver=cfg)
times = torch.arange(K, dtype=torch.float32)
values = torch.randn(B, K, D); mask = (torch.rand(B, K, D) < 0.3).float()
static = torch.randn(B, S); static_mask = torch.ones(B, S); y = (torch.rand(B) < 0.2).float()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
ours = RecurrentEncoder.evolve
def theirs(self, h, t0, t1):
    ys = torchdiffeq.odeint(self.func, h, torch.stack([t0, t1]), method="dopri5", rtol=cfg.rtol, atol=cfg.atol)
    self.solver_stats["n_solves"] += 1
    return ys[-1]
def step():
    opt.zero_grad()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(times, values, mask, static, static_mask), y)
    loss.backward(); opt.step()
state = {k: v.clone() for k, v in model.state_dict().items()}
res = {"nodecourse": [], "torchdiffeq": []}
for r in range(8):
    for name, fn in (("nodecourse", ours), ("torchdiffeq", theirs)):
        model.load_state_dict(state)  # the same weights for both: the same solves
        RecurrentEncoder.evolve = fn
        model.encoder.solver_stats = {"nfe": 0, "n_steps": 0, "n_solves": 0}
        a = time.perf_counter(); step(); res[name].append(time.perf_counter() - a)
        if r == 0:
            print(name, model.encoder.solver_stats)
m = {k: statistics.median(v[1:]) for k, v in res.items()}
print(f"batch {B}, {K} grid times, dopri5 rtol={cfg.rtol} atol={cfg.atol}: training step median "
      f"nodecourse {m['nodecourse']*1e3:.0f} ms, torchdiffeq {m['torchdiffeq']*1e3:.0f} ms, "
      f"ratio {m['nodecourse']/m['torchdiffeq']:.2f}")
