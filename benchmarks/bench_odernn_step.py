"""One ODE-RNN training step (forward, backward, Adam step) with its 47 solves by ``nodecourse.odeint``
or by ``torchdiffeq.odeint`` called directly (same field, same weights, same dopri5 settings),
interleaved; the median of 7 steps each after one untimed step.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_odernn_step.py [BATCH]   # default 32
"""

import statistics
import sys
import time

import torch
import torchdiffeq

from nodecourse.models.latent import ODERNN, RecurrentEncoder
from nodecourse.solvers import SolveConfig

N_TIMES, N_VARIABLES, N_STATIC = 48, 37, 4
CONFIG = SolveConfig(method="dopri5", rtol=1e-3, atol=1e-4)
OURS = RecurrentEncoder.evolve


def evolve_with_torchdiffeq(self, h, t0, t1):
    """``RecurrentEncoder.evolve`` with the solve done by ``torchdiffeq.odeint``."""
    ys = torchdiffeq.odeint(self.func, h, torch.stack([t0, t1]), method="dopri5", rtol=CONFIG.rtol, atol=CONFIG.atol)
    self.solver_stats["n_solves"] += 1
    return ys[-1]


def main(batch: int) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = ODERNN(N_VARIABLES, N_STATIC, solver=CONFIG)
    times = torch.arange(N_TIMES, dtype=torch.float32)
    values = torch.randn(batch, N_TIMES, N_VARIABLES)
    mask = (torch.rand(batch, N_TIMES, N_VARIABLES) < 0.3).float()
    static, static_mask = torch.randn(batch, N_STATIC), torch.ones(batch, N_STATIC)
    labels = (torch.rand(batch) < 0.2).float()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    def step() -> float:
        start = time.perf_counter()
        opt.zero_grad()
        logits = model(times, values, mask, static, static_mask)
        torch.nn.functional.binary_cross_entropy_with_logits(logits, labels).backward()
        opt.step()
        return time.perf_counter() - start

    seconds = {"nodecourse": [], "torchdiffeq": []}
    for repeat in range(8):
        for name, evolve in (("nodecourse", OURS), ("torchdiffeq", evolve_with_torchdiffeq)):
            model.load_state_dict(initial)  # the same weights for both: the same solves
            RecurrentEncoder.evolve = evolve
            model.encoder.solver_stats = {"nfe": 0, "n_steps": 0, "n_solves": 0}
            seconds[name].append(step())
            if repeat == 0:
                print(name, model.encoder.solver_stats)
    RecurrentEncoder.evolve = OURS
    median = {name: statistics.median(s[1:]) for name, s in seconds.items()}  # the first is untimed
    print(
        f"batch {batch}, {N_TIMES} grid times, dopri5 rtol={CONFIG.rtol} atol={CONFIG.atol}: training step "
        f"median nodecourse {median['nodecourse'] * 1e3:.0f} ms, torchdiffeq {median['torchdiffeq'] * 1e3:.0f} ms, "
        f"ratio {median['nodecourse'] / median['torchdiffeq']:.2f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 32)
