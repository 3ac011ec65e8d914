"""Exercise 5 (the ODE-RNN with masks) as task specs.

Every task draws the sizes, the weights (a fresh ``RecurrentEncoder``), the
states, values and masks from the seed and hands the encoder's GRU cell and
vector field to the learner's functions; the references are the same
encoder's ``update``, ``evolve`` and forward pass.
"""

from __future__ import annotations

import numpy as np
import torch

from nodecourse.course.tasks.draw import F64
from nodecourse.course.tasks.draw import generator as _gen
from nodecourse.course.tasks.draw import integer as _integer
from nodecourse.course.tasks.spec import Task, Wrong, array, compared, describe, field_of, judged, max_diff
from nodecourse.data.physionet import HORIZON_HOURS as HORIZON

EXERCISE = "05_latent_odes_exercises"


def _encoder(g: torch.Generator):
    from nodecourse.models import latent

    d, h = _integer(g, 2, 4), _integer(g, 3, 6)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_integer(g, 0, 2**31))
        enc = latent.RecurrentEncoder(d, h, kind="ode", ode_hidden=16).to(F64)
        torch.nn.init.normal_(enc.func.net[-1].weight, std=0.3)  # a non-trivial vector field
    return enc, d, h


def _mask(g: torch.Generator, *shape) -> torch.Tensor:
    return (torch.rand(*shape, generator=g, dtype=F64) < 0.5).to(F64)


def _step_state(seed: int, salt: int) -> dict:
    g = _gen(seed, salt)
    enc, d, h = _encoder(g)
    b = _integer(g, 4, 6)
    m = _mask(g, b, d)
    m[0] = 0.0  # nothing observed for the first patient
    m[1] = 1.0  # everything for the second
    return {
        "enc": enc,
        "h": torch.randn(b, h, generator=g, dtype=F64),
        "x": torch.randn(b, d, generator=g, dtype=F64),
        "m": m,
        "g": g,
    }


# --- masked-update-matches, masked-update-no-leak -------------------------------------------------


def update_inputs(seed: int) -> dict:
    return _step_state(seed, 51)


def update_run(ns, inp) -> dict:
    x, m = inp["x"], inp["m"]
    return {"h": ns["masked_update"](inp["enc"].update.cell, inp["h"].clone(), (x * m).clone(), m.clone())}


def update_reference(inp) -> dict:
    x, m, h = inp["x"], inp["m"], inp["h"]
    return {"h": inp["enc"].update(h, x * m, m), "h0": h, "unobserved": (m.sum(-1) == 0).tolist()}


@judged
def update_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "h", "masked_update's result")
    h0 = array(ref["h0"], "h")
    for row, unobserved in enumerate(ref["unobserved"]):
        if unobserved and not np.array_equal(got[row], h0[row]):
            raise Wrong(
                f"row {row} has nothing observed, so it must keep h exactly; it changed by "
                f"{max_diff(got[row], h0[row]):.2e}"
            )
    if max_diff(got, expected) > 1e-12:
        raise Wrong(f"observed rows differ from the GRU cell fed [x * m, m] by {max_diff(got, expected):.2e}")


def leak_inputs(seed: int) -> dict:
    inp = _step_state(seed, 52)
    inp["m"][2] = 0.0
    inp["m"][2, 0] = 1.0  # a patient with some values observed and some not: a leak shows there (b >= 4, d >= 2)
    leaky = inp["x"].clone()
    leaky[inp["m"] == 0] = 1e6  # values behind a zero mask must not reach the cell
    inp["leaky"] = leaky
    return inp


def leak_run(ns, inp) -> dict:
    cell, m, h = inp["enc"].update.cell, inp["m"], inp["h"]
    return {
        "leaky": ns["masked_update"](cell, h.clone(), inp["leaky"].clone(), m.clone()),
        "clean": ns["masked_update"](cell, h.clone(), (inp["x"] * m).clone(), m.clone()),
    }


def leak_reference(inp) -> dict:
    return {}


@judged
def leak_judge(answer, ref) -> None:
    clean = array(field_of(answer, "clean", "state"), "the result on masked values")
    leaky = array(field_of(answer, "leaky", "state"), "the result with 1e6 behind the mask", clean.shape)
    if not np.allclose(leaky, clean, rtol=1e-12, atol=1e-12):
        raise Wrong(
            f"values behind a zero mask changed the state by up to {max_diff(leaky, clean):.2e}; multiply "
            "the values by the mask before the cell sees them"
        )


# --- odernn-step-matches --------------------------------------------------------------------------


def step_inputs(seed: int) -> dict:
    inp = _step_state(seed, 53)
    k0 = _integer(inp["g"], 0, 40)
    inp["t0"] = torch.tensor(k0 / HORIZON, dtype=F64)
    inp["t1"] = torch.tensor((k0 + _integer(inp["g"], 1, 5)) / HORIZON, dtype=F64)
    return inp


def step_run(ns, inp) -> dict:
    enc = inp["enc"]
    h, nfe = ns["odernn_step"](
        enc.func,
        enc.update.cell,
        inp["h"].clone(),
        inp["t0"].clone(),
        inp["t1"].clone(),
        inp["x"].clone(),
        inp["m"].clone(),
    )
    return {"h": h, "nfe": nfe}


def step_reference(inp) -> dict:
    enc = inp["enc"]
    enc.solver_stats = {"nfe": 0, "n_steps": 0, "n_solves": 0}
    evolved = enc.evolve(inp["h"], inp["t0"], inp["t1"])
    return {
        "h": enc.update(evolved, inp["x"] * inp["m"], inp["m"]),
        "nfe": enc.solver_stats["nfe"],
        "hours": round(float(inp["t1"] - inp["t0"]) * HORIZON),
    }


@judged
def step_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "h", "the new state")
    if max_diff(got, expected) > 1e-10:
        raise Wrong(
            f"the state after evolving {ref['hours']} h and the masked update differs by "
            f"{max_diff(got, expected):.2e} from the library's"
        )
    nfe = field_of(answer, "nfe", "nfe")
    if isinstance(nfe, bool) or not isinstance(nfe, (int, float)) or nfe != ref["nfe"]:
        raise Wrong(f"nfe is {describe(nfe)}; {ref['hours']} Euler steps of one hour take {ref['nfe']}")


# --- odernn-encode-matches, odernn-encode-batch-invariant -----------------------------------------


def encode_inputs(seed: int, salt: int = 54) -> dict:
    g = _gen(seed, salt)
    enc, d, _ = _encoder(g)
    b, k = _integer(g, 2, 4), 49
    mask = (torch.rand(b, k, d, generator=g, dtype=F64) < 0.1).to(F64)
    mask[:, 0] = 0.0  # nobody observed at admission: the first step must evolve from t = 0
    mask[0, -1, 0] = 1.0  # an observation at the horizon: nothing left to evolve at the end
    return {
        "enc": enc,
        "times": torch.arange(float(k), dtype=F64),
        "mask": mask,
        "values": torch.randn(b, k, d, generator=g, dtype=F64),
    }


def encode_run(ns, inp) -> dict:
    enc = inp["enc"]
    h, nfe = ns["odernn_encode"](
        enc.func, enc.update.cell, inp["times"].clone(), inp["values"].clone(), inp["mask"].clone()
    )
    return {"h": h, "nfe": nfe}


def encode_reference(inp) -> dict:
    enc = inp["enc"]
    enc.solver_stats = {"nfe": 0, "n_steps": 0, "n_solves": 0}
    return {"h": enc(inp["times"], inp["values"], inp["mask"]).h_final, "nfe": enc.solver_stats["nfe"]}


@judged
def encode_judge(answer, ref) -> None:
    got, expected = compared(answer, ref, "h", "the final state")
    if max_diff(got, expected) > 1e-10:
        raise Wrong(f"final states differ by {max_diff(got, expected):.2e} from the library's ODE-RNN")
    nfe = field_of(answer, "nfe", "nfe")
    if isinstance(nfe, bool) or not isinstance(nfe, (int, float)) or nfe != ref["nfe"]:
        raise Wrong(
            f"NFE {describe(nfe)} vs the library's {ref['nfe']}; likely cause: a solve across a zero gap "
            "or a missing solve to the horizon"
        )


def batch_inputs(seed: int) -> dict:
    return encode_inputs(seed, salt=55)


def batch_run(ns, inp) -> dict:
    enc = inp["enc"]
    encode = ns["odernn_encode"]
    times, values, mask = inp["times"], inp["values"], inp["mask"]
    together = encode(enc.func, enc.update.cell, times.clone(), values.clone(), mask.clone())[0]
    alone = [
        encode(enc.func, enc.update.cell, times.clone(), values[i : i + 1].clone(), mask[i : i + 1].clone())[0]
        for i in range(values.shape[0])
    ]
    return {"together": together, "alone": torch.cat(alone)}


def batch_reference(inp) -> dict:
    return {}


@judged
def batch_judge(answer, ref) -> None:
    together = array(field_of(answer, "together", "states"), "the batch's final states")
    alone = array(field_of(answer, "alone", "states"), "the states encoded one by one", together.shape)
    if max_diff(together, alone) > 1e-10:
        raise Wrong(
            f"a patient's state depends on who else is in the batch (differs by "
            f"{max_diff(together, alone):.2e}); likely cause: a patient with nothing observed at a time "
            "is updated anyway"
        )


TASKS = (
    Task("masked-update-matches", ("masked-update",), update_inputs, update_run, update_reference, update_judge),
    Task("masked-update-no-leak", ("masked-update",), leak_inputs, leak_run, leak_reference, leak_judge),
    Task(
        "odernn-step-matches",
        ("masked-update", "odernn-step"),
        step_inputs,
        step_run,
        step_reference,
        step_judge,
        after=("masked-update-matches",),
    ),
    Task(
        "odernn-encode-matches",
        ("masked-update", "odernn-step", "odernn-encode"),
        encode_inputs,
        encode_run,
        encode_reference,
        encode_judge,
        after=("odernn-step-matches",),
    ),
    Task(
        "odernn-encode-batch-invariant",
        ("masked-update", "odernn-step", "odernn-encode"),
        batch_inputs,
        batch_run,
        batch_reference,
        batch_judge,
        after=("odernn-encode-matches",),
    ),
)
