# ruff: noqa: E501
"""The exercises as handed out, shipped with the package: what a learner's copy of the course (no
solutions/ folder) is graded against (:func:`nodecourse.course.references.reference_for`).

Each value is the clean exercise notebook as JSON, exactly a fresh build of its solution (setup cells,
stub answer cells, check cells; no solution code, no outputs). Written by
:func:`nodecourse.course.references.write_handout`; a test keeps it equal to the build.

Why this module is long: it is generated data, every handed-out exercise notebook as JSON text in one table,
rewritten whole by :func:`~nodecourse.course.references.write_handout` and never edited by hand.
"""

EXERCISES = {
    "01_resnet_as_euler_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "a497eafc",
   "metadata": {},
   "source": [
    "# Lesson 1 exercises: ResNet as Euler\n",
    "\n",
    "Three tasks. Each one is a function or class to complete in the cell marked\n",
    "*answer*, followed by a check cell that prints `PASS <name>` when your code is\n",
    "right. Run the cells in order, save, and grade the whole notebook from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/01_resnet_as_euler_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "58b5b6ed",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "from torch import nn\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "torch.set_default_dtype(torch.float64)  # the checks compare to 1e-12: float64 throughout\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "caf94c32",
   "metadata": {},
   "source": [
    "## Task 1: one Euler step\n",
    "\n",
    "Euler's method advances the state of $dy/dt = f(t, y)$ by one step of size $h$:\n",
    "\n",
    "$$y_{n+1} = y_n + h\\, f(t_n, y_n).$$\n",
    "\n",
    "Complete `euler_step(f, t, y, h)`: `f(t, y)` returns a tensor shaped like `y`;\n",
    "return $y_{n+1}$, a tensor shaped like `y`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "533380d3",
   "metadata": {
    "nodecourse": {
     "answer": "euler-step"
    }
   },
   "outputs": [],
   "source": [
    "def euler_step(f, t, y, h):\n",
    "    \"\"\"One Euler step of dy/dt = f(t, y) from (t, y) with step h; returns a tensor shaped like y.\"\"\"\n",
    "    raise NotImplementedError(\"task 'euler-step': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "7104963f",
   "metadata": {},
   "source": [
    "The check takes one step of your `euler_step` on $dy/dt = -k y + c \\cos t$ (random $k$, $c$, $h$, $t_0$ and $y_0$) and compares it with one step of the library's Euler solver, to $10^{-12}$. The inputs come from a seed: the check cell uses seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "2df431ae",
   "metadata": {
    "nodecourse": {
     "check": "euler-step"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"01\", \"euler-step\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "8f9c9b64",
   "metadata": {},
   "source": [
    "## Task 2: a residual block is one Euler step\n",
    "\n",
    "A residual block computes $z + f(z)$. Write it as *one Euler step with\n",
    "$\\Delta t = 1$* of the vector field `field(t, z)`: use your `euler_step`,\n",
    "do not write `z + ...` again. Input `(batch, dim)`, output the same shape."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "08c79c54",
   "metadata": {
    "nodecourse": {
     "answer": "residual-block"
    }
   },
   "outputs": [],
   "source": [
    "class EulerResidualBlock(nn.Module):\n",
    "    \"\"\"z -> z + field(t, z), written as one Euler step with step size 1.\"\"\"\n",
    "\n",
    "    def __init__(self, field):\n",
    "        super().__init__()\n",
    "        self.field = field\n",
    "\n",
    "    def forward(self, z):\n",
    "        raise NotImplementedError(\"task 'residual-block': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "692bef92",
   "metadata": {},
   "source": [
    "The check builds the library's one-block residual network (random width and weights) and your block on the same vector field, and compares their outputs and the gradients of $\\sum \\text{out}^2$ with respect to the input. It also counts the calls of your `euler_step` while the block runs: one per forward pass."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "a1f9e8b2",
   "metadata": {
    "nodecourse": {
     "check": "residual-block"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"01\", \"residual-block\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "301932c9",
   "metadata": {},
   "source": [
    "## Task 3: Euler over many steps, and its order\n",
    "\n",
    "Integrate $dy/dt = f(t, y)$ from `t0` to `t1` with `n_steps` equal Euler\n",
    "steps and return $y(t_1)$. The first check compares it with the library's Euler\n",
    "solver (random $f$, $t_0$, $t_1$ and step count). The second measures the *order*: on\n",
    "$dy/dt = -\\lambda y$ (exact solution $y_0 e^{-\\lambda t}$, random $\\lambda$) halving the step should halve the\n",
    "error, so the fitted slope of log(error) against log(step size) should be 1."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "79d04990",
   "metadata": {
    "nodecourse": {
     "answer": "euler-integrate"
    }
   },
   "outputs": [],
   "source": [
    "def euler_integrate(f, y0, t0, t1, n_steps):\n",
    "    \"\"\"y(t1) from n_steps Euler steps of size (t1 - t0) / n_steps, starting at y(t0) = y0.\"\"\"\n",
    "    raise NotImplementedError(\"task 'euler-integrate': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8bb29ac7",
   "metadata": {
    "nodecourse": {
     "check": "euler-integrate-matches"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"01\", \"euler-integrate-matches\", globals())"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "996808f9",
   "metadata": {
    "nodecourse": {
     "check": "euler-order"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"01\", \"euler-order\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "610955c4",
   "metadata": {},
   "source": [
    "## What you showed\n",
    "\n",
    "- A residual block is one Euler step with $\\Delta t = 1$: same output, same gradient.\n",
    "- Euler's method is first order: halving the step halves the error. Lesson 2\n",
    "  measures the higher-order methods the same way."
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "codemirror_mode": {
    "name": "ipython",
    "version": 3
   },
   "file_extension": ".py",
   "mimetype": "text/x-python",
   "name": "python",
   "nbconvert_exporter": "python",
   "pygments_lexer": "ipython3",
   "version": "3.11.7"
  },
  "nodecourse": {
   "built": {
    "08c79c54": "ca17198981560ef2",
    "2df431ae": "f189b9a7964ad064",
    "301932c9": "b3782547c5174fd2",
    "533380d3": "728c70c3395beee5",
    "58b5b6ed": "cbc831dde322324b",
    "610955c4": "c59ae01c0fc20b95",
    "692bef92": "2f5568b9f4b3f110",
    "7104963f": "938816bfed2a37c9",
    "79d04990": "06fc87e368bc743b",
    "8bb29ac7": "102e40bef0c6496f",
    "8f9c9b64": "df43d3040d8f7343",
    "996808f9": "023a18455f3ede9c",
    "a1f9e8b2": "ca016df030d38ae1",
    "a497eafc": "d41d4bf0cd25dcd1",
    "caf94c32": "b68d6ef4a12124be"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "02_solvers_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "d619b78a",
   "metadata": {},
   "source": [
    "# Lesson 2 exercises: solvers and step-size control\n",
    "\n",
    "Four tasks: the classical Runge–Kutta step, then the three pieces of an\n",
    "adaptive solver (the error norm, the accept/reject decision with the new\n",
    "step size, and the loop that puts them together). Each answer cell is\n",
    "followed by a check cell that prints `PASS <name>`. Save, then grade from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/02_solvers_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8f6c885b",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "torch.set_default_dtype(torch.float64)\n",
    "\n",
    "\n",
    "def fitted_order(step_sizes, errors):\n",
    "    \"\"\"Slope of log(error) against log(step size): the measured order of a method.\"\"\"\n",
    "    a = torch.tensor([[math.log(h), 1.0] for h in step_sizes])\n",
    "    b = torch.tensor([[math.log(e)] for e in errors])\n",
    "    return torch.linalg.lstsq(a, b).solution[0, 0].item()"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "8de484e9",
   "metadata": {},
   "source": [
    "## Task 1: one RK4 step\n",
    "\n",
    "The classical fourth-order Runge–Kutta method evaluates $f$ four times per step:\n",
    "\n",
    "$$k_1 = f(t, y),\\quad k_2 = f(t + \\tfrac h2, y + \\tfrac h2 k_1),\\quad\n",
    "  k_3 = f(t + \\tfrac h2, y + \\tfrac h2 k_2),\\quad k_4 = f(t + h, y + h k_3),$$\n",
    "$$y_{n+1} = y + \\tfrac h6 (k_1 + 2k_2 + 2k_3 + k_4).$$\n",
    "\n",
    "Complete `rk4_step(f, t, y, h)`; return a tensor shaped like `y`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "f8860780",
   "metadata": {
    "nodecourse": {
     "answer": "rk4-step"
    }
   },
   "outputs": [],
   "source": [
    "def rk4_step(f, t, y, h):\n",
    "    \"\"\"One classical Runge-Kutta step of dy/dt = f(t, y); returns a tensor shaped like y.\"\"\"\n",
    "    raise NotImplementedError(\"task 'rk4-step': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "780698d1",
   "metadata": {},
   "source": [
    "Two checks: one step agrees with the library's `rk4` on a forced oscillator\n",
    "$y'' = -\\omega^2 y + c \\cos t$ (random $\\omega$, $c$, $t$, $h$ and $y_0$), and the order measured on\n",
    "$dy/dt = a\\, y\\cos t$ (exact solution $e^{a \\sin t}$, random $a$) is 4. The inputs come\n",
    "from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8f4958bd",
   "metadata": {
    "nodecourse": {
     "check": "rk4-step-matches"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"02\", \"rk4-step-matches\", globals())"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "65032ef8",
   "metadata": {
    "nodecourse": {
     "check": "rk4-order"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"02\", \"rk4-order\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "1e4d9dde",
   "metadata": {},
   "source": [
    "## Task 2: the error norm\n",
    "\n",
    "An embedded pair gives two solutions of one step, $y_1$ (order $p$) and\n",
    "$\\hat y_1$ (order $p - 1$); their difference `err` estimates the local\n",
    "error. The solver compares it to the tolerance *per component*, then takes\n",
    "the root mean square:\n",
    "\n",
    "$$\\|e\\| = \\sqrt{\\frac1N \\sum_i \\left(\\frac{e_i}{\\mathrm{atol} + \\mathrm{rtol}\\,\\max(|y_{0,i}|, |y_{1,i}|)}\\right)^2}.$$\n",
    "\n",
    "A step is good enough when $\\|e\\| \\le 1$. Return a Python float."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d003f75d",
   "metadata": {
    "nodecourse": {
     "answer": "error-norm"
    }
   },
   "outputs": [],
   "source": [
    "def error_norm(err, y0, y1, rtol, atol):\n",
    "    \"\"\"RMS of err / (atol + rtol * max(|y0|, |y1|)) over all components, as a float.\"\"\"\n",
    "    raise NotImplementedError(\"task 'error-norm': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "748bcd31",
   "metadata": {
    "nodecourse": {
     "check": "error-norm"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"02\", \"error-norm\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "ab9ff736",
   "metadata": {},
   "source": [
    "## Task 3: accept or reject, and the next step size\n",
    "\n",
    "With the norm $\\|e\\|$ of a step of size $h$ taken by a method of order $p$\n",
    "(the *lower* order of the pair sets how the error scales), the controller\n",
    "\n",
    "- accepts the step when $\\|e\\| \\le 1$;\n",
    "- proposes the next step $h \\cdot \\mathrm{clip}(\\text{safety}\\cdot\\|e\\|^{-1/(p+1)},\\ \\text{min\\_factor},\\ \\text{max\\_factor})$,\n",
    "  both after an accepted step (to grow) and after a rejected one (to retry smaller).\n",
    "\n",
    "When $\\|e\\| = 0$ the factor is `max_factor`. Return `(accepted, h_new)`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "64f48cde",
   "metadata": {
    "nodecourse": {
     "answer": "step-control"
    }
   },
   "outputs": [],
   "source": [
    "def propose_step(h, norm, order, safety=0.9, min_factor=0.2, max_factor=10.0):\n",
    "    \"\"\"(accepted: bool, h_new: float) for a step of size h whose error norm is norm.\"\"\"\n",
    "    raise NotImplementedError(\"task 'step-control': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e5756d4c",
   "metadata": {
    "nodecourse": {
     "check": "step-control"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"02\", \"step-control\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "d46ab207",
   "metadata": {},
   "source": [
    "## Task 4: an adaptive solver from the pieces\n",
    "\n",
    "Put tasks 2 and 3 together. `bosh3_pair` (given) takes one Bogacki–Shampine\n",
    "step and returns the third-order solution and the error estimate (the\n",
    "difference to the embedded second-order one). Write the loop: start with\n",
    "step `h0`, never step past `t1`, accept or reject each step with your\n",
    "controller (use `order=2`, the lower order of the pair), count accepted and\n",
    "rejected steps, and return `(y(t1), n_accepted, n_rejected)`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c0836816",
   "metadata": {},
   "outputs": [],
   "source": [
    "def bosh3_pair(f, t, y, h):\n",
    "    \"\"\"One Bogacki-Shampine 3(2) step: (y1 of order 3, err = y1 - y1_low).\"\"\"\n",
    "    k1 = f(t, y)\n",
    "    k2 = f(t + h / 2, y + h / 2 * k1)\n",
    "    k3 = f(t + 3 * h / 4, y + 3 * h / 4 * k2)\n",
    "    y1 = y + h * (2 / 9 * k1 + 1 / 3 * k2 + 4 / 9 * k3)\n",
    "    k4 = f(t + h, y1)\n",
    "    y1_low = y + h * (7 / 24 * k1 + 1 / 4 * k2 + 1 / 3 * k3 + 1 / 8 * k4)\n",
    "    return y1, y1 - y1_low"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "1ce9edf0",
   "metadata": {
    "nodecourse": {
     "answer": "adaptive-loop"
    }
   },
   "outputs": [],
   "source": [
    "def integrate_adaptive(f, y0, t0, t1, rtol, atol, h0=0.01, max_steps=100_000):\n",
    "    \"\"\"(y(t1), n_accepted, n_rejected) with bosh3_pair, error_norm and propose_step.\"\"\"\n",
    "    raise NotImplementedError(\"task 'adaptive-loop': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "a208c435",
   "metadata": {},
   "source": [
    "The check integrates $dy/dt = a\\, y\\cos t$ (random $a$) on $[0, t_1]$, $t_1$ between 8 and 11,\n",
    "at two tolerances: the error must follow the tolerance (within a factor of 30 of `rtol`\n",
    "times the solution size), tightening the tolerance must cost more steps, a large first\n",
    "step `h0 = 5` must be rejected at least once, and the step counts you return must match\n",
    "the work done (`bosh3_pair` evaluates $f$ four times a step)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8f5139ff",
   "metadata": {
    "nodecourse": {
     "check": "adaptive-loop"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"02\", \"adaptive-loop\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "aa0244b2",
   "metadata": {},
   "source": [
    "## What you showed\n",
    "\n",
    "- RK4 is fourth order: the error falls 16-fold when the step halves.\n",
    "- An adaptive solver is an embedded pair plus three lines of control: a\n",
    "  scaled RMS error norm, accept when it is at most 1, and a new step from\n",
    "  $\\|e\\|^{-1/(p+1)}$ clipped to a safe range. The library's `bosh3` and\n",
    "  `dopri5` do the same, with a better first-step guess."
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "codemirror_mode": {
    "name": "ipython",
    "version": 3
   },
   "file_extension": ".py",
   "mimetype": "text/x-python",
   "name": "python",
   "nbconvert_exporter": "python",
   "pygments_lexer": "ipython3",
   "version": "3.11.7"
  },
  "nodecourse": {
   "built": {
    "1ce9edf0": "37b593b2bd760e84",
    "1e4d9dde": "5a94383a4137b800",
    "64f48cde": "318776ea48c4f43d",
    "65032ef8": "993a67d188497575",
    "748bcd31": "edc38593b4a8d1c9",
    "780698d1": "ed5deeee5ba4c2a9",
    "8de484e9": "bfe1f18e31fd24b1",
    "8f4958bd": "4bed12fae220933b",
    "8f5139ff": "2b43115c56f18079",
    "8f6c885b": "32260308511dddd2",
    "a208c435": "62a498d4f9eff393",
    "aa0244b2": "bdff1f30493c2452",
    "ab9ff736": "ff88172b54328c2e",
    "c0836816": "1819c3d8e49f7b20",
    "d003f75d": "f04980c6b8249df2",
    "d46ab207": "5fa2c2cf89a6f3bf",
    "d619b78a": "e27af5c09575888c",
    "e5756d4c": "c26db53180849351",
    "f8860780": "bfff2fcc72b61767"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "03_annulus_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "fcfc8385",
   "metadata": {},
   "source": [
    "# Lesson 3 exercises: the augmented neural ODE\n",
    "\n",
    "Four tasks. Each one is a function or class to complete in the cell marked\n",
    "*answer*, followed by a check cell that prints `PASS <name>` when your code is\n",
    "right. Run the cells in order, save, and grade the whole notebook from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/03_annulus_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "4386c4f2",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "from torch import nn\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "from nodecourse.data import annulus\n",
    "from nodecourse.models import MLPField\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "c9cbe438",
   "metadata": {},
   "source": [
    "## Task 1: pad with zeros\n",
    "\n",
    "An augmented ODE starts from $[x, 0, \\dots, 0]$: the input with `p` zero\n",
    "coordinates appended. Complete `pad_with_zeros(x, p)`: `x` has shape\n",
    "`(batch, d)`; return shape `(batch, d + p)`, on `x`'s device and dtype. With\n",
    "`p = 0` return `x` unchanged."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d44a2d1e",
   "metadata": {
    "nodecourse": {
     "answer": "pad-zeros"
    }
   },
   "outputs": [],
   "source": [
    "def pad_with_zeros(x, p):\n",
    "    \"\"\"(batch, d) -> (batch, d + p): x followed by p zero coordinates (same device and dtype).\"\"\"\n",
    "    raise NotImplementedError(\"task 'pad-zeros': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "f5d767a1",
   "metadata": {},
   "source": [
    "The check pads float32 and float64 inputs of random sizes (and a random `p`) and compares with the values built by hand. The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "cd53206e",
   "metadata": {
    "nodecourse": {
     "check": "pad-zeros"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"03\", \"pad-zeros\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "3b84f22a",
   "metadata": {},
   "source": [
    "## Task 2: the augmented ODE block\n",
    "\n",
    "Complete `AugmentedBlock.forward(x)`: pad `x` with `self.augment_dim` zeros,\n",
    "solve $dz/dt = $ `self.field(t, z)` from $t = 0$ to $t = 1$ with\n",
    "`nodecourse.odeint` (method `\"dopri5\"`, `rtol=self.tol`, `atol=self.tol`) and\n",
    "return $z(1)$, shape `(batch, d + augment_dim)`. Keep the solver's work\n",
    "visible: store the solve's NFE (`solution.stats[\"nfe\"]`) in `self.last_nfe`.\n",
    "Make the time grid on `x`'s device and dtype."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d427784b",
   "metadata": {
    "nodecourse": {
     "answer": "augmented-block"
    }
   },
   "outputs": [],
   "source": [
    "class AugmentedBlock(nn.Module):\n",
    "    \"\"\"x (batch, d) -> z(1) (batch, d + augment_dim), z(0) = [x, 0], dz/dt = field(t, z).\"\"\"\n",
    "\n",
    "    def __init__(self, field, augment_dim, tol=1e-3):\n",
    "        super().__init__()\n",
    "        self.field = field\n",
    "        self.augment_dim = augment_dim\n",
    "        self.tol = tol\n",
    "        self.last_nfe = 0\n",
    "\n",
    "    def forward(self, x):\n",
    "        raise NotImplementedError(\"task 'augmented-block': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "ef5bfeaf",
   "metadata": {},
   "source": [
    "The check compares your block with the library's `AugmentedODE` on the same random field and\n",
    "input: same output, same NFE."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "259bb419",
   "metadata": {
    "nodecourse": {
     "check": "augmented-block"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"03\", \"augmented-block\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "528f44a2",
   "metadata": {},
   "source": [
    "## Task 3: the classifier\n",
    "\n",
    "Complete `AnnulusClassifier`: an `AugmentedBlock` on $\\mathbb{R}^{2 + p}$\n",
    "whose field is `MLPField(2 + p, hidden=(32, 32), activation=\"relu\")`,\n",
    "followed by a learned linear readout `nn.Linear(2 + p, 1)`. Build the field\n",
    "first, then the readout (the check compares with a model built in that order\n",
    "from the same seed). `forward(x)`: `(batch, 2) -> (batch, 1)`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "cbf5c752",
   "metadata": {
    "nodecourse": {
     "answer": "classifier"
    }
   },
   "outputs": [],
   "source": [
    "class AnnulusClassifier(nn.Module):\n",
    "    \"\"\"(batch, 2) -> (batch, 1): augmented ODE block (augment_dim zeros) then a linear readout.\"\"\"\n",
    "\n",
    "    def __init__(self, augment_dim):\n",
    "        super().__init__()\n",
    "        raise NotImplementedError(\"task 'classifier': replace this line with your code\")\n",
    "\n",
    "    def forward(self, x):\n",
    "        raise NotImplementedError(\"task 'classifier': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8d6d8317",
   "metadata": {
    "nodecourse": {
     "check": "classifier"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"03\", \"classifier\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "02977ca8",
   "metadata": {},
   "source": [
    "## Task 4: train it\n",
    "\n",
    "Complete `train(model, x, y, epochs, lr)`: full-batch Adam at learning rate\n",
    "`lr` on the SmoothL1 loss between `model(x)` and `y`, for `epochs` steps.\n",
    "Return the list of the loss values (Python floats), one per step.\n",
    "\n",
    "The check trains an augmented classifier (one extra dimension) and a plain one\n",
    "(no extra dimension) with your `train` on the annulus (a random sample and initialisation). It judges the\n",
    "models your `train` trained, not the losses it reports: the grader loads their parameters into the\n",
    "library's model of the same shape and evaluates it itself, on held-out annulus points your code never saw\n",
    "(the augmented one must classify at least 90 % of them, the plain one 80 %) and along the whole circle\n",
    "$|x| = 1.25$, inside the ring: the augmented one must have a positive margin everywhere, the plain one\n",
    "must have a wrong arc. This takes a few seconds."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "6e7193a1",
   "metadata": {
    "nodecourse": {
     "answer": "train"
    }
   },
   "outputs": [],
   "source": [
    "def train(model, x, y, epochs, lr):\n",
    "    \"\"\"Full-batch Adam on SmoothL1(model(x), y); returns the loss of each step.\"\"\"\n",
    "    raise NotImplementedError(\"task 'train': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "f3538f25",
   "metadata": {
    "nodecourse": {
     "check": "augmented-fits-the-ring"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"03\", \"augmented-fits-the-ring\", globals())"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "49358d96",
   "metadata": {
    "nodecourse": {
     "check": "plain-has-a-wrong-arc"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"03\", \"plain-has-a-wrong-arc\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "219c393e",
   "metadata": {},
   "source": [
    "## What you showed\n",
    "\n",
    "- padding with zeros and flowing in $\\mathbb{R}^{2+p}$ is all an augmented neural ODE is;\n",
    "- trained the same way, the augmented classifier separates the disk from the whole ring, while the\n",
    "  plain one leaves a wrong arc on the circle $|x| = 1.25$, as the homeomorphism argument says it must."
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "02977ca8": "44cc1c14ec135dbc",
    "219c393e": "cdac4879ca63c834",
    "259bb419": "29f464b6a7562e7d",
    "3b84f22a": "4493d60089a28e53",
    "4386c4f2": "ecfdb2515da7a13d",
    "49358d96": "e339907617bbe57d",
    "528f44a2": "5de329e603204636",
    "6e7193a1": "13871d7d18a60746",
    "8d6d8317": "c3330ed9a3b8111f",
    "c9cbe438": "8f3a1cddbe78be11",
    "cbf5c752": "932e21b5dbc3f830",
    "cd53206e": "ecab34dfe6ce0a6b",
    "d427784b": "12d51fd591beae8b",
    "d44a2d1e": "e75a6e0a6086d44b",
    "ef5bfeaf": "f4ed70f62179c318",
    "f3538f25": "3197a0e10c023a4a",
    "f5d767a1": "ffbef1fc584b2c5b",
    "fcfc8385": "6e6154ab11d18857"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "04_adjoint_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "9d731681",
   "metadata": {},
   "source": [
    "# Lesson 4 exercises: the adjoint\n",
    "\n",
    "Three tasks. Each one is a function or class to complete in the cell marked\n",
    "*answer*, followed by a check cell that prints `PASS <name>` when your code is\n",
    "right. Run the cells in order, save, and grade the whole notebook from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/04_adjoint_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "47e60e98",
   "metadata": {},
   "outputs": [],
   "source": [
    "import torch\n",
    "from torch import nn\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "from nodecourse.measure import measure_peak\n",
    "from nodecourse.models import MLPField\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "da15e929",
   "metadata": {},
   "source": [
    "## Task 1: the adjoint dynamics\n",
    "\n",
    "The adjoint solves, backwards in time, the augmented system\n",
    "\n",
    "$$\\dot z = f(t, z), \\qquad \\dot a = -a^\\top \\frac{\\partial f}{\\partial z}, \\qquad\n",
    "\\dot g_k = -a^\\top \\frac{\\partial f}{\\partial \\theta_k}$$\n",
    "\n",
    "for each parameter tensor $\\theta_k$. Complete `adjoint_dynamics(func, params, t, z, a)`: return\n",
    "`(f, da, dg)` where `f = func(t, z)`, `da` has `z`'s shape and `dg` is a list with one tensor per\n",
    "parameter, each of that parameter's shape. Compute the products $a^\\top \\partial f/\\partial z$ and\n",
    "$a^\\top \\partial f/\\partial \\theta_k$ with **one** call of `torch.autograd.grad(f, inputs, grad_outputs=a)`\n",
    "(a vector-Jacobian product; never build a Jacobian). The function is called with gradients off (inside\n",
    "a backward pass): switch them on with `torch.enable_grad()` and differentiate with respect to a detached\n",
    "copy of `z` that requires grad. Return tensors without a graph (`.detach()`)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "3baa5f34",
   "metadata": {
    "nodecourse": {
     "answer": "adjoint-dynamics"
    }
   },
   "outputs": [],
   "source": [
    "def adjoint_dynamics(func, params, t, z, a):\n",
    "    \"\"\"(f, -a^T df/dz, [-a^T df/dtheta_k]) at (t, z); z and a of the same shape.\"\"\"\n",
    "    raise NotImplementedError(\"task 'adjoint-dynamics': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "080eb88b",
   "metadata": {},
   "source": [
    "The check compares your `f`, `da` and every `dg` with autograd's vector-Jacobian products on a\n",
    "random small MLP field (random sizes, $t$, $z$ and $a$; float64), with gradients switched off as\n",
    "they are in a backward pass. The inputs come from a seed: the check cells use seed 0, the\n",
    "grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "7645021e",
   "metadata": {
    "nodecourse": {
     "check": "adjoint-dynamics"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"04\", \"adjoint-dynamics\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "833962d0",
   "metadata": {},
   "source": [
    "## Task 2: the adjoint as an autograd Function\n",
    "\n",
    "`LearnerAdjoint.apply(func, t1, n_steps, y0, *params)` returns $z(t_1)$ from a fixed-step RK4 solve on\n",
    "$[0, t_1]$ with `n_steps` steps. `forward` is written for you: it solves **without** a graph and keeps\n",
    "only $z(t_1)$. Complete `backward(ctx, grad_z1)`: solve the augmented state $[z, a, g]$ (flattened into\n",
    "one vector) from $t_1$ back to $0$ with `odeint(..., method=\"rk4\", step_size=t1 / n_steps)`, starting\n",
    "from $[z(t_1), \\partial L/\\partial z(t_1), 0]$, using your `adjoint_dynamics`. Return\n",
    "`(None, None, None, dL/dy0, *dL/dparams)`, each shaped like its input."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "0188d48c",
   "metadata": {
    "nodecourse": {
     "answer": "learner-adjoint"
    }
   },
   "outputs": [],
   "source": [
    "class LearnerAdjoint(torch.autograd.Function):\n",
    "    @staticmethod\n",
    "    def forward(ctx, func, t1, n_steps, y0, *params):\n",
    "        t = torch.tensor([0.0, t1], dtype=y0.dtype, device=y0.device)\n",
    "        with torch.no_grad():\n",
    "            z1 = odeint(func, y0, t, method=\"rk4\", step_size=t1 / n_steps).ys[-1]\n",
    "        ctx.func, ctx.t1, ctx.n_steps = func, t1, n_steps\n",
    "        ctx.save_for_backward(z1, *params)\n",
    "        return z1\n",
    "\n",
    "    @staticmethod\n",
    "    def backward(ctx, grad_z1):\n",
    "        z1, *params = ctx.saved_tensors\n",
    "        raise NotImplementedError(\"task 'learner-adjoint': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "135a0d34",
   "metadata": {},
   "source": [
    "The check differentiates $L = \\sum z(t_1)^2$ through your Function and compares the gradients\n",
    "for $y_0$ and every parameter with backpropagation through the same RK4 solve (random field,\n",
    "$y_0$, $t_1$ and 30 to 50 steps, float64: the adjoint and the discrete solve agree far below the\n",
    "$10^{-5}$ relative tolerance used)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "ce70ad74",
   "metadata": {
    "nodecourse": {
     "check": "learner-adjoint"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"04\", \"learner-adjoint\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "95258c6f",
   "metadata": {},
   "source": [
    "## Task 3: is your adjoint's memory flat?\n",
    "\n",
    "Measure it. Complete `peak_bytes(use_adjoint, n_steps)`: build nothing new, use the field `field3`\n",
    "(a 64-256-64 MLP) and the batch `y03` (256 states) defined below; run one forward solve on $[0, 1]$ with\n",
    "`n_steps` RK4 steps, either through your `LearnerAdjoint` (`use_adjoint=True`) or with plain\n",
    "`odeint(..., gradient=\"backprop\")`, then `backward()` on $\\sum z(1)^2$; return the peak extra memory of\n",
    "forward + backward in bytes, measured with `nodecourse.measure.measure_peak(fn)` (it runs `fn()` once)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "85733f15",
   "metadata": {},
   "outputs": [],
   "source": [
    "torch.manual_seed(3)\n",
    "field3 = MLPField(64, hidden=(256,))\n",
    "params3 = list(field3.parameters())\n",
    "y03 = torch.randn(256, 64, requires_grad=True)"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e12a6f45",
   "metadata": {
    "nodecourse": {
     "answer": "flat-memory"
    }
   },
   "outputs": [],
   "source": [
    "def peak_bytes(use_adjoint, n_steps):\n",
    "    \"\"\"Peak extra memory (bytes) of one forward + backward with n_steps RK4 steps on [0, 1].\"\"\"\n",
    "    raise NotImplementedError(\"task 'flat-memory': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "f0e88856",
   "metadata": {},
   "source": [
    "The check measures one forward + backward itself, both ways, at $n$ and $4n$ steps ($n$ drawn\n",
    "between 6 and 10, after one warm-up run each), in a fresh process: backprop's peak must grow by\n",
    "at least 2x (it keeps every stage's activations), your adjoint's growth must be less than a\n",
    "tenth of backprop's, and your `peak_bytes` must report what it measured (within 3 %)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "6de714f7",
   "metadata": {
    "nodecourse": {
     "check": "flat-memory"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"04\", \"flat-memory\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "0188d48c": "ea70e783a393ed33",
    "080eb88b": "100345f14f6973d5",
    "135a0d34": "55ada1545c1adc92",
    "3baa5f34": "31b9bfd113c547ea",
    "47e60e98": "d2957f6d0dcd908e",
    "6de714f7": "39e281ff331523da",
    "7645021e": "da4690b14f463d01",
    "833962d0": "2a21cd16a9290d43",
    "85733f15": "db36620284760b26",
    "95258c6f": "927226c169ba33fc",
    "9d731681": "0fc96df6fc1aee35",
    "ce70ad74": "4b248e994cea7fce",
    "da15e929": "22eeb1f3a582a64b",
    "e12a6f45": "89b24221b4f0a466",
    "f0e88856": "4bdd49d6b1534362"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "05_latent_odes_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "484db456",
   "metadata": {},
   "source": [
    "# Lesson 5 exercises: the ODE-RNN update with masks\n",
    "\n",
    "Three tasks build the ODE-RNN of lesson 5 from its parts: the masked GRU update at one observation time,\n",
    "one ODE-RNN step (evolve the hidden state, then update), and the loop over a batch's union of observation\n",
    "times. Each answer cell is followed by check cells that print `PASS <name>`; they compare your code with\n",
    "`nodecourse.models.latent`, using the same weights (random sizes, weights and data, drawn\n",
    "from a seed: the check cells use seed 0, the grader draws a new one each time). Save, then grade from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/05_latent_odes_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "4b2f074b",
   "metadata": {},
   "outputs": [],
   "source": [
    "import torch\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "from nodecourse.models import latent\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "torch.manual_seed(0)\n",
    "torch.set_default_dtype(torch.float64)\n",
    "D, H = 3, 5  # variables, hidden size\n",
    "reference = latent.RecurrentEncoder(D, H, kind=\"ode\", ode_hidden=16).double()\n",
    "torch.nn.init.normal_(reference.func.net[-1].weight, std=0.3)  # a non-trivial vector field\n",
    "cell, func = reference.update.cell, reference.func  # the weights your functions use\n",
    "STEP = 1 / 48  # one hour, in units of the 48-hour horizon"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "c838f565",
   "metadata": {},
   "source": [
    "## Task 1: the masked GRU update\n",
    "\n",
    "At an observation time a patient has values `x` (B, D) and a mask `m` (B, D), 1 where a value was observed.\n",
    "Feed the GRU cell the concatenation `[x * m, m]` (the mask tells the cell *which* zeros are missing values),\n",
    "and keep the old state `h` (B, H) for patients with nothing observed at this time (`m` all zero in their row).\n",
    "Return the new state (B, H)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "ba3b86c9",
   "metadata": {
    "nodecourse": {
     "answer": "masked-update"
    }
   },
   "outputs": [],
   "source": [
    "def masked_update(cell, h, x, m):\n",
    "    \"\"\"GRU update with a mask: cell is an nn.GRUCell(2 * D, H); h (B, H), x and m (B, D).\"\"\"\n",
    "    raise NotImplementedError(\"task 'masked-update': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e865ade5",
   "metadata": {
    "nodecourse": {
     "check": "masked-update-matches"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"05\", \"masked-update-matches\", globals())"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e4ab42e6",
   "metadata": {
    "nodecourse": {
     "check": "masked-update-no-leak"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"05\", \"masked-update-no-leak\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "f60300a4",
   "metadata": {},
   "source": [
    "## Task 2: one ODE-RNN step\n",
    "\n",
    "Between two observation times `t_prev < t` (scaled: hours / 48), the state follows $dh/dt = f(h)$: solve it with\n",
    "`odeint(func, h, torch.stack([t_prev, t]), method=\"euler\", step_size=STEP)` and take the last state. Then apply\n",
    "your masked update with the observation at `t`. Return `(h_new, nfe)` where `nfe` is the solver's\n",
    "`stats[\"nfe\"]` (solver work is never invisible)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "3958f19d",
   "metadata": {
    "nodecourse": {
     "answer": "odernn-step"
    }
   },
   "outputs": [],
   "source": [
    "def odernn_step(func, cell, h, t_prev, t, x, m):\n",
    "    \"\"\"Evolve h from t_prev to t (0-d tensors), then update with (x, m) observed at t.\"\"\"\n",
    "    raise NotImplementedError(\"task 'odernn-step': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "059aae1e",
   "metadata": {
    "nodecourse": {
     "check": "odernn-step-matches"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"05\", \"odernn-step-matches\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "e7bc965f",
   "metadata": {},
   "source": [
    "## Task 3: the loop over a batch's union of observation times\n",
    "\n",
    "`times` (K,) are hours on the grid, `values` and `mask` (B, K, D). Start from `h = 0` at `times[0]`; visit, in\n",
    "order, every grid index where *any* patient of the batch has an observation; at each, do one ODE-RNN step from\n",
    "the previous time. Evolve only across a positive gap: an observation at `times[0]` itself needs just the\n",
    "masked update, and at the end evolve from the last observation to the horizon `times[-1]` only if there is a\n",
    "positive gap left. The last observation is often *at* the horizon (it is in the check's data): then there is\n",
    "nothing to evolve, so skip that solve (`odeint` needs strictly increasing times). Time is divided by the fixed\n",
    "48 hours. Return the final state (B, H) and the total NFE."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "acbce003",
   "metadata": {
    "nodecourse": {
     "answer": "odernn-encode"
    }
   },
   "outputs": [],
   "source": [
    "def odernn_encode(func, cell, times, values, mask):\n",
    "    \"\"\"Final ODE-RNN state (B, H) after 48 hours, and the total NFE.\"\"\"\n",
    "    raise NotImplementedError(\"task 'odernn-encode': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c8a38b65",
   "metadata": {
    "nodecourse": {
     "check": "odernn-encode-matches"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"05\", \"odernn-encode-matches\", globals())"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "f3a0b32b",
   "metadata": {
    "nodecourse": {
     "check": "odernn-encode-batch-invariant"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"05\", \"odernn-encode-batch-invariant\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "b51b06e5",
   "metadata": {},
   "source": [
    "## What you built\n",
    "\n",
    "The ODE-RNN's whole recurrence: an ODE between observations, a GRU update where something was observed, and\n",
    "a batch processed over the union of its patients' times without any patient's state depending on the others.\n",
    "`nodecourse.models.latent.ODERNN` adds a mortality head on the final state and the descriptors."
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "codemirror_mode": {
    "name": "ipython",
    "version": 3
   },
   "file_extension": ".py",
   "mimetype": "text/x-python",
   "name": "python",
   "nbconvert_exporter": "python",
   "pygments_lexer": "ipython3",
   "version": "3.11.7"
  },
  "nodecourse": {
   "built": {
    "059aae1e": "e86721c7ed7795da",
    "3958f19d": "a96be5eeacad8e5c",
    "484db456": "30a2121ca34446c8",
    "4b2f074b": "b7f6c2502de3251c",
    "acbce003": "363ce14e6b006337",
    "b51b06e5": "53952530b77f7dea",
    "ba3b86c9": "66a50016ee3153ae",
    "c838f565": "c3fb3acfb5f8606e",
    "c8a38b65": "74090c4c882deef1",
    "e4ab42e6": "d6225bc7025bff41",
    "e7bc965f": "44232ebb54d2d7b5",
    "e865ade5": "b930840187d4e699",
    "f3a0b32b": "24d03372f7f76106",
    "f60300a4": "0893cd4de76e6da9"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "06_deq_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "63cf1609",
   "metadata": {},
   "source": [
    "# Lesson 6 exercises: Anderson acceleration, the implicit backward, the Hutchinson estimator\n",
    "\n",
    "Four tasks. Each one is a function to complete in the cell marked *answer*, followed by a check\n",
    "cell that prints `PASS <name>` when your code is right. Run the cells in order, save, and grade the\n",
    "whole notebook from a terminal in the course folder (in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/06_deq_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "71a21773",
   "metadata": {},
   "outputs": [],
   "source": [
    "import torch\n",
    "\n",
    "from nodecourse import DEQ, fixed_point\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "from nodecourse.deq import EquilibriumBlock, contraction, exact_jacobian_frobenius\n",
    "from nodecourse.deq import anderson_weights as library_weights\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "c65c61e4",
   "metadata": {},
   "source": [
    "## Task 1: Anderson's mixing weights\n",
    "\n",
    "Anderson acceleration keeps the last $n$ residuals $g_i = f(x_i) - x_i$ as the rows of `G`\n",
    "(shape `(n, D)`) and looks for weights $\\alpha$ with $\\sum_i \\alpha_i = 1$ that minimise\n",
    "$\\|\\sum_i \\alpha_i g_i\\|$. With the Gram matrix $H = G G^\\top$ the solution is\n",
    "$a = (H + \\lambda s I)^{-1} \\mathbf{1}$, $\\alpha = a / \\sum_i a_i$, where $s$ is the mean of the\n",
    "diagonal of $H$ (the mean squared residual norm). Scaling the small Tikhonov term $\\lambda$ by\n",
    "$s$ keeps the weights right when the residuals are tiny (at $10^{-8}$, $H$ has entries near\n",
    "$10^{-16}$, and a fixed $\\lambda = 10^{-4}$ would drown it).\n",
    "\n",
    "Complete `mixing_weights(G, lam)`: return $\\alpha$, shape `(n,)`, same dtype as `G`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "293c9812",
   "metadata": {
    "nodecourse": {
     "answer": "mixing-weights"
    }
   },
   "outputs": [],
   "source": [
    "def mixing_weights(G, lam=1e-10):\n",
    "    '''Weights alpha (n,), summing to 1, minimising ||alpha @ G|| for residual history G (n, D).'''\n",
    "    raise NotImplementedError(\"task 'mixing-weights': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "ed974ebf",
   "metadata": {},
   "source": [
    "The check compares with the library's batched version on a random history (3 to 6 residuals)\n",
    "at two scales (norms near 1 and near $10^{-8}$: the weights must not change with the scale) and checks\n",
    "that no other weights summing to one give a smaller combined residual. The inputs come from a seed:\n",
    "the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5f7c21b7",
   "metadata": {
    "nodecourse": {
     "check": "mixing-weights"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"06\", \"mixing-weights\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "3555ff4b",
   "metadata": {},
   "source": [
    "## Task 2: the Anderson iteration\n",
    "\n",
    "Complete `anderson(f, z0, m, tol, max_iter)` for one problem (`z0` a vector of shape `(D,)`):\n",
    "\n",
    "1. at each iteration evaluate `fz = f(z)` and the residual `g = fz - z`; stop (returning `z` and the\n",
    "   number of evaluations made) as soon as `g.norm() / fz.norm() <= tol`;\n",
    "2. append `z` and `g` to the histories and keep only the last `m`;\n",
    "3. with `alpha = mixing_weights(G)` over the residual history, step to\n",
    "   `z = sum_i alpha_i (x_i + g_i)` (that is, $\\sum_i \\alpha_i f(x_i)$).\n",
    "\n",
    "Return `(z, n_evals)`; if `max_iter` evaluations pass without meeting `tol`, return the last `z`\n",
    "and `max_iter`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "7134bc8b",
   "metadata": {
    "nodecourse": {
     "answer": "anderson"
    }
   },
   "outputs": [],
   "source": [
    "def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):\n",
    "    '''Anderson-accelerated fixed-point iteration for z = f(z), z0 of shape (D,). Returns (z, n_evals).'''\n",
    "    raise NotImplementedError(\"task 'anderson': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "2b21d4ef",
   "metadata": {},
   "source": [
    "The check runs your solver on a random contraction with spectral radius between 0.98 and\n",
    "0.99 (float64, dimension 20 to 40) and compares with the exact fixed point and with Picard iteration,\n",
    "which needs well over a thousand evaluations. It counts your calls of `f`: the count you return must\n",
    "include every one."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "657d0d21",
   "metadata": {
    "nodecourse": {
     "check": "anderson"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"06\", \"anderson\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "829d5209",
   "metadata": {},
   "source": [
    "## Task 3: the implicit backward hook\n",
    "\n",
    "`DEQ` finds $z^*$ without autograd, then computes `f_z = f(z, x)` once with a graph, where `z` is a\n",
    "detached copy of $z^*$ that requires grad. A gradient hook on the output replaces the incoming\n",
    "gradient $g$ by the solution $y$ of $y = y\\,\\partial_z f + g$.\n",
    "\n",
    "Complete `make_implicit_hook(f_z, z, tol)`: return a function `hook(grad)` that solves that fixed\n",
    "point with `fixed_point(..., method=\"anderson\", tol=tol, max_iter=200)`, starting from `grad`, using\n",
    "`torch.autograd.grad(f_z, z, y, retain_graph=True)[0]` for $y\\,\\partial_z f$, and returns the solution."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e89b4c8d",
   "metadata": {
    "nodecourse": {
     "answer": "implicit-hook"
    }
   },
   "outputs": [],
   "source": [
    "def make_implicit_hook(f_z, z, tol=1e-12):\n",
    "    '''Gradient hook: grad -> y with y = y df/dz + grad (f_z = f(z, x) at the fixed point z).'''\n",
    "    raise NotImplementedError(\"task 'implicit-hook': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "e508aca3",
   "metadata": {},
   "source": [
    "The check builds a tiny DEQ by hand (a random `EquilibriumBlock`) with your hook and compares\n",
    "the parameter gradients with backpropagation through 300 unrolled Picard steps (float64): they must\n",
    "agree to $10^{-6}$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "b92bf17f",
   "metadata": {
    "nodecourse": {
     "check": "implicit-hook"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"06\", \"implicit-hook\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "e4f2392e",
   "metadata": {},
   "source": [
    "## Task 4: the Hutchinson estimator\n",
    "\n",
    "For `f_out = f(z)` (both `(B, D)`, `f` acting on each row), estimate each row's\n",
    "$\\|\\partial f/\\partial z\\|_F^2$ by $\\frac{1}{M}\\sum_{j=1}^{M} \\|\\varepsilon_j^\\top J\\|^2$ with Gaussian\n",
    "probes $\\varepsilon_j$ (one `torch.autograd.grad(f_out, z, eps, create_graph=True)` per probe, so the\n",
    "estimate can be trained through). Draw each probe with `eps = torch.randn_like(f_out)`, one per sample, in\n",
    "order. Complete `hutchinson(f_out, z, n_samples)`, returning shape `(B,)`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "934dc72b",
   "metadata": {
    "nodecourse": {
     "answer": "hutchinson"
    }
   },
   "outputs": [],
   "source": [
    "def hutchinson(f_out, z, n_samples=1):\n",
    "    '''Per-row Hutchinson estimate of ||df/dz||_F^2, shape (B,), differentiable.'''\n",
    "    raise NotImplementedError(\"task 'hutchinson': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "b2bf91bf",
   "metadata": {},
   "source": [
    "The check supplies the probes: before each of four calls (random points, 1 to 3 samples) it seeds\n",
    "torch's generator with a seed of its own, so your `torch.randn_like` draws probes it knows, and it\n",
    "compares your estimates with the estimator's on the same probes, to rounding (the exact value times\n",
    "noise is not an estimator). It also checks that the result carries a gradient."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "bbfd81c6",
   "metadata": {
    "nodecourse": {
     "check": "hutchinson"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"06\", \"hutchinson\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "293c9812": "6931b529f2cc4795",
    "2b21d4ef": "34469359f4df5dca",
    "3555ff4b": "8275c374de324c43",
    "5f7c21b7": "6dff8a8a6d793017",
    "63cf1609": "114446549592f79c",
    "657d0d21": "4fcf4ec28f249883",
    "7134bc8b": "0634181f166698d9",
    "71a21773": "26cdafb070334ba6",
    "829d5209": "26cfe138427436d9",
    "934dc72b": "c16bc1912a365ccd",
    "b2bf91bf": "ca0f9d75264ac540",
    "b92bf17f": "281f105353282a4b",
    "bbfd81c6": "6f29e4dcea8601b4",
    "c65c61e4": "6a10d7ab5058258c",
    "e4f2392e": "3410b577bfc63cf4",
    "e508aca3": "03b4d0eafa699ed8",
    "e89b4c8d": "175d48a111a0f373",
    "ed974ebf": "915a6f3920d3b289"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "08_continuous_normalising_flows_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "ada4bc64",
   "metadata": {},
   "source": [
    "# Lesson 8 exercises: Hutchinson's trace inside a CNF\n",
    "\n",
    "Four tasks. Each one is a function or class to complete in the cell marked\n",
    "*answer*, followed by a check cell that prints `PASS <name>` when your code is\n",
    "right. Run the cells in order, save, and grade the whole notebook from a terminal in the course folder\n",
    "(in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/08_continuous_normalising_flows_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade.\n",
    "\n",
    "Shapes throughout: states `(batch, d)`, one value per sample `(batch,)`. The field never mixes rows\n",
    "of the batch, so row `b` of a gradient only involves sample `b`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "449817ae",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "from torch import nn\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check\n",
    "from nodecourse.models import MLPField, standard_normal_log_prob\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "7fe11ef1",
   "metadata": {},
   "source": [
    "## Task 1: the exact divergence\n",
    "\n",
    "Complete `exact_divergence(f_out, z)`: `f_out = f(z)` was computed from `z` (which requires grad), both\n",
    "`(batch, d)`. Return $\\operatorname{tr}(\\partial f/\\partial z)$ per sample, shape `(batch,)`.\n",
    "Hint: `torch.autograd.grad(f_out[:, i].sum(), z, create_graph=True, retain_graph=True)` gives, in row `b`,\n",
    "the gradient of $f_i$ of sample `b`; you need its entry `i`. Keep `create_graph=True` so the result can be\n",
    "differentiated again (training does)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "06ece476",
   "metadata": {
    "nodecourse": {
     "answer": "exact-divergence"
    }
   },
   "outputs": [],
   "source": [
    "def exact_divergence(f_out, z):\n",
    "    \"\"\"tr(∂f/∂z) per sample: (batch, d), (batch, d) -> (batch,). d backward passes.\"\"\"\n",
    "    raise NotImplementedError(\"task 'exact-divergence': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "366ca6cc",
   "metadata": {},
   "source": [
    "The check builds the full Jacobian of a random field for each sample with\n",
    "`torch.autograd.functional.jacobian`, compares your divergence with its trace, and checks that the\n",
    "result can be differentiated again. The inputs (sizes, field, points) come from a seed: the check\n",
    "cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "34d8988f",
   "metadata": {
    "nodecourse": {
     "check": "exact-divergence"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"08\", \"exact-divergence\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "6f7b6e28",
   "metadata": {},
   "source": [
    "## Task 2: Hutchinson's estimator\n",
    "\n",
    "Complete `hutchinson_divergence(f_out, z, probes)`: `probes` has shape `(M, batch, d)`, each `probes[m]`\n",
    "a probe $\\varepsilon$ per sample with $\\mathbb{E}[\\varepsilon\\varepsilon^\\top] = I$. Return the mean over\n",
    "the `M` probes of $\\varepsilon^\\top (\\partial f/\\partial z)\\, \\varepsilon$, per sample, shape `(batch,)`,\n",
    "using one vector-Jacobian product per probe: `torch.autograd.grad(f_out, z, eps, create_graph=True, retain_graph=True)`\n",
    "returns $\\varepsilon^\\top \\partial f/\\partial z$ row by row. Never build the Jacobian."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "b091559c",
   "metadata": {
    "nodecourse": {
     "answer": "hutchinson"
    }
   },
   "outputs": [],
   "source": [
    "def hutchinson_divergence(f_out, z, probes):\n",
    "    \"\"\"Hutchinson estimate of tr(∂f/∂z) per sample: probes (M, batch, d) -> (batch,).\"\"\"\n",
    "    raise NotImplementedError(\"task 'hutchinson': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "78c570a5",
   "metadata": {},
   "source": [
    "The check compares your estimate with the library's on the same random probes (and checks\n",
    "that it carries a gradient), then runs it on 20,000 more Rademacher probes at one point, which it supplies too, and compares those\n",
    "estimates with the library's, one by one (their mean is the exact trace, up to the probes' noise)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "9704c3f9",
   "metadata": {
    "nodecourse": {
     "check": "hutchinson"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"08\", \"hutchinson\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "619dda6b",
   "metadata": {},
   "source": [
    "## Task 3: the augmented dynamics\n",
    "\n",
    "A CNF integrates the state and its log-density change together: on `state = [z, Δlog p]` of shape\n",
    "`(batch, d + 1)`,\n",
    "\n",
    "$$\\frac{d}{dt}\\begin{pmatrix} z \\\\ \\Delta\\log p\\end{pmatrix} = \\begin{pmatrix} f(t, z) \\\\ -\\operatorname{tr}(\\partial f/\\partial z)\\end{pmatrix}.$$\n",
    "\n",
    "Complete `HutchinsonDynamics.forward(t, state)`: split `state`, evaluate `self.field(t, z)` with autograd on\n",
    "(`with torch.enable_grad():`, and `z = z.requires_grad_(True)` when `z` does not already require grad:\n",
    "the solver may hand you a tensor without history), estimate the trace with your `hutchinson_divergence`\n",
    "and the fixed `self.probes` (shape `(M, batch, d)`, set before each solve, the same at every evaluation),\n",
    "and return `(batch, d + 1)`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "e2cd7042",
   "metadata": {
    "nodecourse": {
     "answer": "dynamics"
    }
   },
   "outputs": [],
   "source": [
    "class HutchinsonDynamics(nn.Module):\n",
    "    \"\"\"d/dt [z, Δlog p] = [f(t, z), -tr(∂f/∂z)] with the trace estimated by Hutchinson on fixed probes.\"\"\"\n",
    "\n",
    "    def __init__(self, field):\n",
    "        super().__init__()\n",
    "        self.field = field\n",
    "        self.probes = None  # (M, batch, d), set before each solve\n",
    "\n",
    "    def forward(self, t, state):\n",
    "        raise NotImplementedError(\"task 'dynamics': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "1819f1c2",
   "metadata": {},
   "source": [
    "The check evaluates your dynamics and the library's `nodecourse.models.CNFDynamics` (with the same probes) on\n",
    "the same random state, once with gradients off as a solver may call it, and compares the outputs and\n",
    "the gradients they give the field's parameters."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "fc4c1204",
   "metadata": {
    "nodecourse": {
     "check": "dynamics"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"08\", \"dynamics\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "bc916c83",
   "metadata": {},
   "source": [
    "## Task 4: the log-density\n",
    "\n",
    "Complete `log_prob(dynamics, x, probes, t1=1.0)`: start from `[x, 0]`, set `dynamics.probes = probes`,\n",
    "solve from $t = 0$ to $t_1$ with `odeint(dynamics, state0, t, method=\"dopri5\", rtol=1e-8, atol=1e-8)`\n",
    "(time grid on `x`'s device and dtype), and return\n",
    "$\\log p(x) = \\log\\mathcal{N}(z(t_1); 0, I) - \\Delta\\log p(t_1)$ per sample, `(batch,)`, together with the\n",
    "solve's NFE: `return log_p, solution.stats[\"nfe\"]`. (`standard_normal_log_prob` gives\n",
    "$\\log\\mathcal{N}$.)\n",
    "\n",
    "The check uses a random **diagonal** linear field $f(z) = Dz$: then $\\varepsilon^\\top D \\varepsilon = \\operatorname{tr} D$\n",
    "for every Rademacher probe, so the estimator is exact, and the answer is known in closed form:\n",
    "$\\log p(x) = \\log\\mathcal{N}(e^{D}x) + \\operatorname{tr} D$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "0ead01dd",
   "metadata": {
    "nodecourse": {
     "answer": "log-prob"
    }
   },
   "outputs": [],
   "source": [
    "def log_prob(dynamics, x, probes, t1=1.0):\n",
    "    \"\"\"log p(x) (batch,) of a CNF whose flow maps x at t=0 to N(0, I) at t1; also the solve's NFE.\"\"\"\n",
    "    raise NotImplementedError(\"task 'log-prob': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "ff54124c",
   "metadata": {
    "nodecourse": {
     "check": "log-prob"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"08\", \"log-prob\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "06ece476": "386b74787270d5cf",
    "0ead01dd": "89f09360119a7ed5",
    "1819f1c2": "e1d9065346fa3961",
    "34d8988f": "63c94f6c76aa148b",
    "366ca6cc": "2f6a164c1efcc2bb",
    "449817ae": "3a00ea90ff211b6a",
    "619dda6b": "e0da39c3c523b3e8",
    "6f7b6e28": "9e35ec2b6cbe0ef8",
    "78c570a5": "79085c277389ce2b",
    "7fe11ef1": "8f7a44a922310a45",
    "9704c3f9": "a24417e6506c9d34",
    "ada4bc64": "a83b5d8dd02bbb26",
    "b091559c": "39989054dc540d4a",
    "bc916c83": "d041feeeb12e4175",
    "e2cd7042": "78d9c3ee11c2b033",
    "fc4c1204": "f53ea0879a53d605",
    "ff54124c": "6db499446bd166ae"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "09_audit_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "0b271894",
   "metadata": {},
   "source": [
    "# Lesson 9 exercises: audit a model by hand\n",
    "\n",
    "Five tasks. Each one is a function to complete in the cell marked *answer*, followed by a check cell\n",
    "that prints `PASS <name>` when your code is right. Run the cells in order, save, and grade the whole\n",
    "notebook from a terminal in the course folder (in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/09_audit_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade.\n",
    "\n",
    "You are given two models from lesson 9 (`nodecourse.lessons.lesson09`), each with its data:\n",
    "\n",
    "- `rotating_classifier()`: points of the plane turn by 60 radians under dopri5 at `rtol = atol = 1e-3`,\n",
    "  and the class is the side of a line the point ends on. Tasks 1 and 2 find where its accuracy breaks.\n",
    "- `long_horizon_regressor(gradient)`: $dz/dt = Az$ on $[0, 3]$ with a fast decaying mode rotated into\n",
    "  both coordinates, then a linear readout. Tasks 3 to 5 find which gradient route is wrong on it.\n",
    "\n",
    "Both are `model.readout(model.block(x))` with `model.block` an `nodecourse.models.ODEBlock`: its solver\n",
    "settings are `model.block.solver` (a `SolveConfig`), and `model.block.solve(z0, rtol=..., atol=...)` solves\n",
    "with other settings for one call, returning the `Solution` (its `ys[-1]` is the final state, its `stats[\"nfe\"]`\n",
    "the work)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "da32f588",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check, close, same\n",
    "from nodecourse.lessons.lesson09 import long_horizon_regressor, rotating_classifier\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "79cb8fda",
   "metadata": {},
   "source": [
    "## Task 1: accuracy at a test-time tolerance\n",
    "\n",
    "Complete `accuracy_at(model, x, y, tol)`: solve `model.block` from `x` with `rtol = atol = tol` (for this\n",
    "call only: do not change `model.block.solver`), read the logits out with `model.readout`, and return\n",
    "`(accuracy, nfe)`: the fraction of rows whose largest logit is at the label `y` (a float), and the NFE of\n",
    "that solve (an int). No gradients are needed."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "70196c4c",
   "metadata": {
    "nodecourse": {
     "answer": "accuracy-at"
    }
   },
   "outputs": [],
   "source": [
    "def accuracy_at(model, x, y, tol):\n",
    "    \"\"\"(accuracy, nfe) of the classifier solved at rtol = atol = tol.\"\"\"\n",
    "    raise NotImplementedError(\"task 'accuracy-at': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "b013e417",
   "metadata": {},
   "source": [
    "The check solves a rotating classifier (a rotation between 40 and 70 radians, 200 to 400 points) at a tight\n",
    "and a loose tolerance itself and compares both numbers: the NFE must be equal (the same solve does the same\n",
    "work) and the accuracy within half a row of the library's (a mean computed in float32 is fine); it also\n",
    "checks that the model's own settings are unchanged.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d5176554",
   "metadata": {
    "nodecourse": {
     "check": "accuracy-at"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"09\", \"accuracy-at\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "460e041b",
   "metadata": {},
   "source": [
    "## Task 2: where it breaks\n",
    "\n",
    "Complete `breaking_tolerance(model, x, y, tols)`: `tols` is a list of tolerances from tight to loose. Using\n",
    "your `accuracy_at`, return the first tolerance in `tols` whose accuracy is more than 5 points (0.05) below\n",
    "the accuracy at the first (tightest) one, or `None` when none is."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8e6b64fb",
   "metadata": {
    "nodecourse": {
     "answer": "breaking-tolerance"
    }
   },
   "outputs": [],
   "source": [
    "def breaking_tolerance(model, x, y, tols):\n",
    "    \"\"\"The first tol (tight to loose) whose accuracy is > 0.05 below the tightest's; None if none.\"\"\"\n",
    "    raise NotImplementedError(\"task 'breaking-tolerance': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "fac3b74f",
   "metadata": {},
   "source": [
    "The check computes the accuracy at each tolerance itself, for two rotations (one between 50 and 70 radians,\n",
    "one between 15 and 25), two lists of tolerances each and, for the fast rotation, a third list by quarter\n",
    "decades, and compares your answer with the rule applied to those numbers. It only uses draws it can decide:\n",
    "some list breaks, and no accuracy sits exactly at a threshold.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5d8377fd",
   "metadata": {
    "nodecourse": {
     "check": "breaking-tolerance"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"09\", \"breaking-tolerance\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "04eebda2",
   "metadata": {},
   "source": [
    "## Task 3: a directional derivative by finite differences\n",
    "\n",
    "Complete `directional_derivative(loss_fn, params, direction, h)`: `params` is a list of parameter tensors,\n",
    "`direction` a list of tensors of the same shapes, `loss_fn()` a function of no arguments returning a scalar\n",
    "tensor that depends on `params`. Return the central difference\n",
    "$\\big(L(\\theta + h v) - L(\\theta - h v)\\big) / 2h$ as a float, changing the parameters in place under\n",
    "`torch.no_grad()`, and restore every parameter afterwards: save copies first and `copy_` them back (each\n",
    "entry must be back to within $10^{-12}$ of its value; subtracting $h v$ again leaves rounding, which is\n",
    "within that, but copying back is exact and survives an error)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "370253b5",
   "metadata": {
    "nodecourse": {
     "answer": "directional-derivative"
    }
   },
   "outputs": [],
   "source": [
    "def directional_derivative(loss_fn, params, direction, h):\n",
    "    \"\"\"(L(theta + h v) - L(theta - h v)) / 2h; the parameters are restored exactly.\"\"\"\n",
    "    raise NotImplementedError(\"task 'directional-derivative': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "63b97aab",
   "metadata": {},
   "source": [
    "The check differentiates a small random float64 MLP's summed output along a random direction, compares with\n",
    "autograd's exact directional derivative (relative error below 1e-6 at $h = 10^{-5}$), and checks that\n",
    "every parameter entry is back to within $10^{-12}$ (relative to its size, at least 1) of what it was.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d50f7853",
   "metadata": {
    "nodecourse": {
     "check": "directional-derivative"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"09\", \"directional-derivative\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "823c3e28",
   "metadata": {},
   "source": [
    "## Task 4: one route against finite differences\n",
    "\n",
    "Complete `route_error(model, x, route, directions)`. With $L(\\theta) = \\sum$ `model(x)` and $\\theta$ the\n",
    "parameters of the field, `list(model.block.field.parameters())`:\n",
    "\n",
    "1. solve with gradient route `route` (`\"backprop\"`, `\"checkpoint\"` or `\"adjoint\"`): set\n",
    "   `model.block.solver = model.block.solver.replace(gradient=route)`, compute $L$ and its gradient $g$ with\n",
    "   `torch.autograd.grad`, and put the old `solver` back;\n",
    "2. for each direction $v$ in `directions`, the route's directional derivative $g \\cdot v$, and the finite\n",
    "   difference of your `directional_derivative` with $h = 10^{-4}$, computed with the block solved\n",
    "   *tightly* (`rtol = atol = 1e-10`: set the solver with `replace(rtol=1e-10, atol=1e-10)` while you take\n",
    "   them, then put it back), so that they approximate the exact ODE's derivative;\n",
    "3. return the relative error $\\lVert (g\\cdot v_k)_k - (\\mathrm{fd}_k)_k \\rVert / \\lVert (\\mathrm{fd}_k)_k \\rVert$ as a float."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "209f8d19",
   "metadata": {
    "nodecourse": {
     "answer": "route-error"
    }
   },
   "outputs": [],
   "source": [
    "def route_error(model, x, route, directions):\n",
    "    \"\"\"Relative error of the route's directional derivatives of sum(model(x)) against tight finite differences.\"\"\"\n",
    "    raise NotImplementedError(\"task 'route-error': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "36c47062",
   "metadata": {},
   "source": [
    "The check runs your function for the three routes on a long-horizon model (three random directions,\n",
    "each as long as the parameter vector) and compares with errors computed in the same way from the library's\n",
    "routes: each within a factor of 2 or, where the reference is at the finite differences' noise (below $10^{-4}$), below $10^{-4}$ too; and\n",
    "the model's settings must be unchanged afterwards. It also records the tolerance of every solve your function\n",
    "makes: the finite differences (the solves without gradients) must be taken at $10^{-10}$; at the model's own\n",
    "tolerance they would measure the solver's discrete derivative, not the ODE's.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "eeebd87c",
   "metadata": {
    "nodecourse": {
     "check": "route-error"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"09\", \"route-error\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "0f4e7a3b",
   "metadata": {},
   "source": [
    "## Task 5: which route is wrong?\n",
    "\n",
    "Complete `wrong_route(model, x, directions)`: return the name of the one route of `(\"backprop\",\n",
    "\"checkpoint\", \"adjoint\")` whose `route_error` exceeds `1e-2`, or `None` if none does (use your Task 4).\n",
    "Then read the answer: the adjoint recovers the states by solving backwards, where the decayed mode grows\n",
    "by $e^{10 \\cdot 3}$; lesson 4 measured the same thing, and ANODE reported it."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5458b84f",
   "metadata": {
    "nodecourse": {
     "answer": "wrong-route"
    }
   },
   "outputs": [],
   "source": [
    "def wrong_route(model, x, directions):\n",
    "    \"\"\"The route whose gradient errs by more than 1e-2 against tight finite differences, or None.\"\"\"\n",
    "    raise NotImplementedError(\"task 'wrong-route': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "2dbde950",
   "metadata": {},
   "source": [
    "The check computes every route's error against tight finite differences itself, for the same kind of model\n",
    "trained with the adjoint (the audit's step 5, `nodecourse.audit.audit`, does the same with its own\n",
    "directions), and compares your answer with the one route whose error exceeds $10^{-2}$.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "270e2d2f",
   "metadata": {
    "nodecourse": {
     "check": "wrong-route"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"09\", \"wrong-route\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "04eebda2": "86d99926e206ddb5",
    "0b271894": "92dfd04028acc30e",
    "0f4e7a3b": "99fca61247d18f20",
    "209f8d19": "c12f23a5200f4680",
    "270e2d2f": "b7f2088fd2a635b5",
    "2dbde950": "7f5c0583ab10dd9e",
    "36c47062": "c5178a8f72446bcd",
    "370253b5": "5eaabad0fcc78e02",
    "460e041b": "c8a870542668e103",
    "5458b84f": "c43569e2e718fe13",
    "5d8377fd": "14ba2adc94083cb2",
    "63b97aab": "c2a52ccfd47f1338",
    "70196c4c": "2710bc5335e8419c",
    "79cb8fda": "71528b8d7617c75f",
    "823c3e28": "4ae77d850006fa61",
    "8e6b64fb": "d1b4003c9f305a66",
    "b013e417": "65fc2a67985def05",
    "d50f7853": "b4ca3ca09880b245",
    "d5176554": "a9598b86ae640449",
    "da32f588": "895951c992906fb3",
    "eeebd87c": "1630f4850772a246",
    "fac3b74f": "4f75efdc6331302d"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "10_cheaper_and_exact_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "750e5059",
   "metadata": {},
   "source": [
    "# Lesson 10 exercises: cheaper and exact\n",
    "\n",
    "Four tasks, each from [lesson 10](../notebooks/10_cheaper_and_exact.ipynb): the kinetic energy as augmented\n",
    "dynamics, one reversible Heun step, its exact inverse, and the seminorm of the adjoint's backward solve. Each\n",
    "one is a function to complete in the cell marked *answer*, followed by check cells that print `PASS <name>`\n",
    "when your code is right. Run the cells in order, save, and grade the whole notebook from a terminal in the\n",
    "course folder (in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/10_cheaper_and_exact_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade. Write your own code: the checks compare it with the library's\n",
    "implementation (`nodecourse.models.regularised_block`, `nodecourse.solvers._reversible`, `odeint`'s\n",
    "`adjoint_options`), which they use in a separate process of their own."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "85738b6f",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "\n",
    "from nodecourse import odeint\n",
    "from nodecourse.config import use_course_threads\n",
    "from nodecourse.course.checks import check, close, same\n",
    "from nodecourse.models import MLPField\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "e9dd2ad8",
   "metadata": {},
   "source": [
    "## Task 1: the kinetic energy as augmented dynamics\n",
    "\n",
    "Finlay et al.'s kinetic regulariser is $E(T) = \\int_0^T \\|f(t, z)\\|^2\\,dt$, one number per sample. It is\n",
    "computed by the solve itself: append one channel $E$ to the state, with $E(0) = 0$ and\n",
    "\n",
    "$$\\frac{d}{dt}\\begin{bmatrix} z \\\\ E \\end{bmatrix} = \\begin{bmatrix} f(t, z) \\\\ \\|f(t, z)\\|^2 \\end{bmatrix}.$$\n",
    "\n",
    "Complete `kinetic_dynamics(field, t, state)`: `state` has shape `(B, d + 1)`, the first `d` columns are $z$\n",
    "and the last is $E$. Return a tensor of the same shape whose first `d` columns are `field(t, z)` and whose\n",
    "last column is the squared norm of that row of `field(t, z)` (sum of squares over the `d` columns). $E$ itself\n",
    "does not enter the right-hand side. Keep the graph (no `.detach()`, no `torch.no_grad()`): the kinetic energy\n",
    "goes into a training loss, and its gradient with respect to the field's parameters must flow."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "ef5afbd2",
   "metadata": {
    "nodecourse": {
     "answer": "kinetic-dynamics"
    }
   },
   "outputs": [],
   "source": [
    "def kinetic_dynamics(field, t, state):\n",
    "    \"\"\"d/dt [z, E] = [f(t, z), ||f(t, z)||^2] for a state of shape (B, d + 1).\"\"\"\n",
    "    raise NotImplementedError(\"task 'kinetic-dynamics': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "3236fb85",
   "metadata": {},
   "source": [
    "The first check evaluates your function at a random state (float64) and compares it with `field(t, z)` and\n",
    "the row-wise sum of squares; the last column of the state must not matter, and the result must carry a graph\n",
    "to the field's parameters (the gradient of its last column is compared too).\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "355f6d39",
   "metadata": {
    "nodecourse": {
     "check": "kinetic-dynamics"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"kinetic-dynamics\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "607c443b",
   "metadata": {},
   "source": [
    "The second check solves your augmented dynamics with RK4 (10 to 30 steps on $[0, 1]$) from $[z_0, 0]$ and\n",
    "compares $E(1)$, $z(1)$ and the gradient of the batch mean of $E(1)$ with respect to the field's first weight\n",
    "with the library's `regularised_block` (kinetic term only) on the same field and steps."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "14f31cd8",
   "metadata": {
    "nodecourse": {
     "check": "kinetic-energy"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"kinetic-energy\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "284a89c6",
   "metadata": {},
   "source": [
    "## Task 2: one reversible Heun step\n",
    "\n",
    "Reversible Heun carries three tensors from step to step: the solution $y$, a second state $\\hat z$ and the\n",
    "slope $f = f(t, \\hat z)$ (at the start, $\\hat z_0 = y_0$ and $f_0 = f(t_0, y_0)$). One step of size $h$ from\n",
    "time $t$ is\n",
    "\n",
    "$$\\hat z_1 = 2y - \\hat z + h f, \\qquad f_1 = f(t + h, \\hat z_1), \\qquad y_1 = y + \\tfrac{h}{2}(f + f_1).$$\n",
    "\n",
    "Complete `reversible_heun_step(func, t, h, y, zh, f)`: return `(y1, zh1, f1)`. `t` and `h` are Python floats;\n",
    "call `func(t_new, zh1)` with `t_new` as a 0-d tensor of `y`'s dtype and device\n",
    "(`torch.tensor(t + h, dtype=y.dtype, device=y.device)`). Exactly one evaluation of `func` per step."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "f1389ad2",
   "metadata": {
    "nodecourse": {
     "answer": "heun-step"
    }
   },
   "outputs": [],
   "source": [
    "def reversible_heun_step(func, t, h, y, zh, f):\n",
    "    \"\"\"One reversible Heun step from (y, zh, f) at time t; returns (y1, zh1, f1) at t + h.\"\"\"\n",
    "    raise NotImplementedError(\"task 'heun-step': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "2ad6f069",
   "metadata": {},
   "source": [
    "The first check takes one step from a random $(y, \\hat z, f)$ on an MLP field (float64) and compares the\n",
    "three outputs with the library's step, counting the evaluations of `func` and the time they are made at.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5010c356",
   "metadata": {
    "nodecourse": {
     "check": "heun-step"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"heun-step\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "7ecd9c6e",
   "metadata": {},
   "source": [
    "The second check runs your step 10 to 30 times on $[0, 1]$ from $\\hat z_0 = y_0$, $f_0 = f(0, y_0)$ and compares\n",
    "$y$ at the end with the library's `odeint(..., method=\"reversible_heun\")` at the same step size."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "adf8573d",
   "metadata": {
    "nodecourse": {
     "check": "heun-solve"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"heun-solve\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "5bd00b0b",
   "metadata": {},
   "source": [
    "## Task 3: the exact inverse\n",
    "\n",
    "The step can be undone by algebra, with one evaluation of $f$ and no equation to solve: from\n",
    "$(y_1, \\hat z_1, f_1)$ at time $t_1$,\n",
    "\n",
    "$$\\hat z = 2y_1 - \\hat z_1 - h f_1, \\qquad f = f(t_1 - h, \\hat z), \\qquad y = y_1 - \\tfrac{h}{2}(f + f_1).$$\n",
    "\n",
    "(Check it: substitute the forward step into the first formula.) Complete\n",
    "`reversible_heun_inverse(func, t1, h, y1, zh1, f1)`: return `(y, zh, f)` at `t1 - h`, with one call of\n",
    "`func` (time as a 0-d tensor of `y1`'s dtype and device, as in task 2)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "a547cb90",
   "metadata": {
    "nodecourse": {
     "answer": "heun-inverse"
    }
   },
   "outputs": [],
   "source": [
    "def reversible_heun_inverse(func, t1, h, y1, zh1, f1):\n",
    "    \"\"\"Undo reversible_heun_step: from (y1, zh1, f1) at t1 back to (y, zh, f) at t1 - h.\"\"\"\n",
    "    raise NotImplementedError(\"task 'heun-inverse': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "a017141c",
   "metadata": {},
   "source": [
    "The first check inverts a random $(y_1, \\hat z_1, f_1)$ with $f_1 = f(t_1, \\hat z_1)$ (a state a step can reach)\n",
    "and compares with the library's inverse (float64), from which the library's step lands back on\n",
    "$(y_1, \\hat z_1, f_1)$; `func` must be evaluated once, at $t_1 - h$.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5513e07e",
   "metadata": {
    "nodecourse": {
     "check": "heun-inverse"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"heun-inverse\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "9c634208",
   "metadata": {},
   "source": [
    "The second check goes 30 to 60 steps forward with your step and as many back with your inverse on $[0, 1]$:\n",
    "the start must come back to within $10^{-12}$, where any method run backwards with $-h$ (what an adjoint does)\n",
    "misses it by its truncation error."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "824ce56a",
   "metadata": {
    "nodecourse": {
     "check": "heun-roundtrip"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"heun-roundtrip\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "ef718889",
   "metadata": {},
   "source": [
    "## Task 4: the seminorm\n",
    "\n",
    "The adjoint's backward solve integrates one flat vector $x = [z, a, g]$: the state $z$ ($n$ entries), the\n",
    "adjoint $a$ ($n$ entries) and the parameter gradients $g$ (one entry per parameter), in that order. Its\n",
    "step size is set by an error norm of the scaled error; the default is the RMS over every entry,\n",
    "$\\sqrt{\\frac{1}{N}\\sum_i x_i^2}$. The seminorm leaves $g$ out: the RMS over the first $2n$ entries only.\n",
    "\n",
    "Complete `make_seminorm(n)`: return a function `norm(x)` that takes a flat 1-D tensor and returns that RMS as a\n",
    "0-d tensor. It is passed to the adjoint as its backward solve's own norm:\n",
    "`odeint(..., gradient=\"adjoint\", adjoint_options={\"options\": {\"norm\": make_seminorm(z0.numel())}})`."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "61a6a67e",
   "metadata": {
    "nodecourse": {
     "answer": "seminorm"
    }
   },
   "outputs": [],
   "source": [
    "def make_seminorm(n):\n",
    "    \"\"\"norm(x): the RMS of the first 2 n entries of the flat backward state x = [z, a, g].\"\"\"\n",
    "    raise NotImplementedError(\"task 'seminorm': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "2d72db0e",
   "metadata": {},
   "source": [
    "The first check evaluates your norm on a random vector ($n$ between 3 and 9, 4 to 20 parameter entries):\n",
    "the RMS of the first $2n$ entries, unchanged when the parameter entries change, a 0-d tensor.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "1edf6b31",
   "metadata": {
    "nodecourse": {
     "check": "seminorm-values"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"seminorm-values\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "27554008",
   "metadata": {},
   "source": [
    "The second check uses your norm inside the library's adjoint on a small field with many parameters and\n",
    "few state entries (dopri5 at $10^{-6}$, float64): the backward NFE and the gradient must be those of\n",
    "`adjoint_options={\"norm\": \"seminorm\"}`. A failure shows the saving against the full norm."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "489c1761",
   "metadata": {
    "nodecourse": {
     "check": "seminorm-adjoint"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"10\", \"seminorm-adjoint\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "14f31cd8": "e3d9b4d0ce502e01",
    "1edf6b31": "aa63794202f758df",
    "27554008": "96ef9e4b78f2a9e3",
    "284a89c6": "c9b32761524c110b",
    "2ad6f069": "88aff2d9e8458aff",
    "2d72db0e": "7094a04a41ce7da6",
    "3236fb85": "07b94f9698a8c17b",
    "355f6d39": "ad358a04dec6aca9",
    "489c1761": "fe9afd36810b9a2d",
    "5010c356": "883fe528ca9596f9",
    "5513e07e": "7719ce5f34a8be0b",
    "5bd00b0b": "7b41e5e774531e7b",
    "607c443b": "3f36fe5cbe156c1b",
    "61a6a67e": "be8ab6a2d7aefc73",
    "750e5059": "f1e16e56a31591a8",
    "7ecd9c6e": "4b735422cf5462e9",
    "824ce56a": "609d3c1a5e4c7dfe",
    "85738b6f": "8cc66c4ee57d3137",
    "9c634208": "d1ec1e8867c0fd12",
    "a017141c": "e7c67203f596d3a0",
    "a547cb90": "e34553c799cb155d",
    "adf8573d": "c30a623602833079",
    "e9dd2ad8": "59ef19bd6f8dd89f",
    "ef5afbd2": "da237ed353c0c8a9",
    "ef718889": "ddb2c6e227f64fef",
    "f1389ad2": "2783c49277c43fd1"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
    "11_beyond_odes_exercises.ipynb": r"""{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "c134f153",
   "metadata": {},
   "source": [
    "# Lesson 11 exercises: beyond ODEs\n",
    "\n",
    "Three tasks, each from [lesson 11](../notebooks/11_beyond_odes.ipynb): Euler–Maruyama and its strong order on\n",
    "geometric Brownian motion, the contraction at the heart of a neural CDE's vector field, and what the\n",
    "interpolation's causality means for a series. Each one is a function to complete in the cell marked *answer*,\n",
    "followed by check cells that print `PASS <name>` when your code is right. Run the cells in order, save, and grade\n",
    "the whole notebook from a terminal in the course folder (in JupyterLab: File > New > Terminal):\n",
    "\n",
    "```\n",
    "nodecourse grade exercises/11_beyond_odes_exercises.ipynb\n",
    "```\n",
    "\n",
    "The grader runs your answer cells and any code cells you add (a helper in a cell of its own), in\n",
    "notebook order, under the same rules; a handed-out setup or check cell runs as handed out, so editing\n",
    "one does not change your grade. Write tasks 1 and 2 with torch alone: the checks compare them with the\n",
    "library's implementation (`nodecourse.sde.sdeint`, `nodecourse.cde.cdeint`), which they use in a separate process\n",
    "of their own. Task 3 uses the library's interpolations."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "51560883",
   "metadata": {},
   "outputs": [],
   "source": [
    "import math\n",
    "\n",
    "import torch\n",
    "\n",
    "from nodecourse.cde import interpolate\n",
    "from nodecourse.config import use_course_threads\n",
    "\n",
    "use_course_threads()  # torch's CPU threads for this machine: see `nodecourse check`\n",
    "\n",
    "_ = torch.manual_seed(0)"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "8f0c0d79",
   "metadata": {},
   "source": [
    "## Task 1: Euler–Maruyama and its strong order\n",
    "\n",
    "An Itô SDE $dy = f(t, y)\\,dt + g(t, y)\\,dW$ with diagonal noise (entry $i$ of $g$ multiplies entry $i$ of $dW$)\n",
    "is advanced by Euler–Maruyama as\n",
    "\n",
    "$$y_{n+1} = y_n + f(t_n, y_n)\\,h + g(t_n, y_n)\\,\\Delta W_n,$$\n",
    "\n",
    "where $\\Delta W_n = W(t_n + h) - W(t_n)$ is the Brownian increment over the step: a normal draw of variance $h$,\n",
    "already scaled (it is *not* multiplied by $\\sqrt h$ again).\n",
    "\n",
    "Complete `euler_maruyama_step(f, g, t, y, h, dw)`: `y` and `dw` have shape `(batch, d)`; `f(t, y)` and `g(t, y)`\n",
    "return tensors of that shape; `t` and `h` are Python floats. Evaluate `f` and `g` once each, at $t$ (as a number\n",
    "or a 0-d tensor), and return $y_{n+1}$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "5ae9c232",
   "metadata": {
    "nodecourse": {
     "answer": "em-step"
    }
   },
   "outputs": [],
   "source": [
    "def euler_maruyama_step(f, g, t, y, h, dw):\n",
    "    \"\"\"One Euler-Maruyama step of dy = f(t, y) dt + g(t, y) dW (Ito, diagonal noise); y, dw: (batch, d).\"\"\"\n",
    "    raise NotImplementedError(\"task 'em-step': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "d48f55f6",
   "metadata": {},
   "source": [
    "The check takes one step from a random state with a nonlinear drift and a diagonal diffusion (float64) and\n",
    "compares it with the formula, recording the times `f` and `g` are called at.\n",
    "The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "8e9ab808",
   "metadata": {
    "nodecourse": {
     "check": "em-step"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"em-step\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "32736de1",
   "metadata": {},
   "source": [
    "**The strong order.** Geometric Brownian motion $dy = \\mu y\\,dt + \\sigma y\\,dW$, $y(0) = y_0$, has the exact\n",
    "solution $y(T) = y_0 \\exp\\big((\\mu - \\sigma^2/2)\\,T + \\sigma W(T)\\big)$ (the $-\\sigma^2/2$ is Itô's correction).\n",
    "The strong error at step size $h$ is $\\mathbb{E}\\,|Y_N - y(T)|$, with $Y_N$ the Euler–Maruyama solution and\n",
    "$y(T)$ the exact one *on the same Brownian path*; it falls like $h^{p}$, and $p$ is the strong order.\n",
    "\n",
    "Complete `measure_strong_order(mu, sigma, y0, T, dw, factors)`: `dw` has shape `(n, paths, 1)`, the increments of\n",
    "$W$ over $n$ equal steps of $[0, T]$ for each path. For each factor $k$ in `factors` ($k$ divides $n$), take\n",
    "$n/k$ steps of size $h = Tk/n$ with your `euler_maruyama_step`, each with the *sum* of the $k$ fine increments it\n",
    "spans (the same path, coarser), and estimate the strong error as the mean over paths of $|Y_N - y(T)|$. Return\n",
    "`(errors, order)`: the list of errors in the order of `factors` (Python floats) and the least-squares slope of\n",
    "$\\log(\\text{error})$ against $\\log h$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "057c42ac",
   "metadata": {
    "nodecourse": {
     "answer": "strong-order"
    }
   },
   "outputs": [],
   "source": [
    "def measure_strong_order(mu, sigma, y0, T, dw, factors):\n",
    "    \"\"\"Euler-Maruyama on geometric Brownian motion against the exact solution on the same increments dw\n",
    "    (n, paths, 1); returns (errors, order): mean |Y_N - y(T)| per factor, and the slope of log error on log h.\"\"\"\n",
    "    raise NotImplementedError(\"task 'strong-order': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "183337b5",
   "metadata": {},
   "source": [
    "The check draws $\\mu$, $\\sigma$, $y_0$ and 400 paths of 256 increments on $[0, 1]$, runs your function with\n",
    "factors 1, 2, 4, 8, 16, and compares the errors with Euler–Maruyama's (a product of $1 + \\mu h + \\sigma\\,\\Delta W$\n",
    "over the steps, in closed form) against the exact solution, then your order with the fit of those errors: it must\n",
    "be near 0.5."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "02e6973f",
   "metadata": {
    "nodecourse": {
     "check": "em-order"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"em-order\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "cc680fdd",
   "metadata": {},
   "source": [
    "## Task 2: the CDE vector field's contraction\n",
    "\n",
    "A neural CDE $dz = f(z)\\,dX(t)$ is solved as the ODE $dz/dt = f(z)\\,\\frac{dX}{dt}$: for each sample in the\n",
    "batch, $f(z)$ is a matrix of shape `(hidden, channels)` and $dX/dt$ a vector of `channels` entries, so\n",
    "\n",
    "$$\\text{out}[b, i] = \\sum_j f(z)[b, i, j]\\, \\frac{dX}{dt}[b, j].$$\n",
    "\n",
    "Complete `cde_vector_field(fz, dxdt)`: `fz` has shape `(batch, hidden, channels)`, `dxdt` shape\n",
    "`(batch, channels)`; return shape `(batch, hidden)`, for every size, batch 1, hidden 1 and channels 1 included,\n",
    "keeping the graph to `fz` (a neural CDE trains $f$ through this product)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "a085cc06",
   "metadata": {
    "nodecourse": {
     "answer": "cde-contract"
    }
   },
   "outputs": [],
   "source": [
    "def cde_vector_field(fz, dxdt):\n",
    "    \"\"\"f(z) dX/dt: fz (batch, hidden, channels) and dxdt (batch, channels) -> (batch, hidden).\"\"\"\n",
    "    raise NotImplementedError(\"task 'cde-contract': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "d0cb565f",
   "metadata": {},
   "source": [
    "The first check calls your function on six random shapes (float64): hidden and channels different, hidden equal\n",
    "to channels (where a transpose keeps the shapes but not the values), batch 1, channels 1, hidden 1, and all three\n",
    "1. The inputs come from a seed: the check cells use seed 0, the grader draws a new one each time."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "21114798",
   "metadata": {
    "nodecourse": {
     "check": "cde-contract"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"cde-contract\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "6b0b18b5",
   "metadata": {},
   "source": [
    "The second check solves a CDE with your contraction inside `odeint` (RK4, steps of 0.05 on $[0, 1]$, a Hermite path through a\n",
    "random series, a small $f$) and compares the final state and the gradient of its squared norm with respect to\n",
    "$f$'s weight with the library's `cdeint` on the same path and steps."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "f7b94d72",
   "metadata": {
    "nodecourse": {
     "check": "cde-solve"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"cde-solve\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "10488514",
   "metadata": {},
   "source": [
    "## Task 3: which observations does the path before $t_k$ depend on?\n",
    "\n",
    "A neural CDE reads the series through a path $X$ built from the observations $x_0, \\dots, x_{L-1}$ at times\n",
    "$t_0 < \\dots < t_{L-1}$. If the path before $t_k$ depends on $x_k$, the model's state at earlier times uses an\n",
    "observation that has not arrived yet: fine for a finished record, not for a model that must answer online.\n",
    "\n",
    "Complete `path_change(x, t, k, new_value, kind, s)`: `x` has shape `(L, channels)` (NaN where a value is\n",
    "missing), `t` shape `(L,)`, `new_value` shape `(channels,)`, `s` a sorted tensor of query times. Build the path of\n",
    "`kind` (`\"hermite\"`: Hermite cubic with backward differences; `\"natural\"`: the natural cubic spline) through `x`\n",
    "and through a copy of `x` whose row `k` is `new_value` (`nodecourse.cde.interpolate(x, t, kind=kind)`; do not\n",
    "change `x` itself), and return `(change, first)`: `change` = $X_\\text{new}(s) - X_\\text{old}(s)$, shape\n",
    "`(len(s), channels)`, and `first` the earliest query time at which some channel of the path moves by more than\n",
    "`1e-9` (a Python float; None if it never does)."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "b788b4b7",
   "metadata": {
    "nodecourse": {
     "answer": "path-change"
    }
   },
   "outputs": [],
   "source": [
    "def path_change(x, t, k, new_value, kind, s):\n",
    "    \"\"\"How the path of kind through x (L, channels) at times t moves at s when row k becomes new_value:\n",
    "    returns (change (len(s), channels), the first query time where it moves by more than 1e-9, or None).\"\"\"\n",
    "    raise NotImplementedError(\"task 'path-change': replace this line with your code\")"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "1c401ba1",
   "metadata": {},
   "source": [
    "The first check draws a complete series (6 to 10 observations at irregular times, 1 to 3 channels), a row\n",
    "$k \\ge 2$ to change and 3 to 5 query times inside each interval between observations, and compares your\n",
    "`change` and `first` for both kinds with the library's. Before you run it, predict `first` for each kind from $t_{k-1}$ and $t_0$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "1e2e3cfc",
   "metadata": {
    "nodecourse": {
     "check": "path-change"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"path-change\", globals())"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "e08d1a06",
   "metadata": {},
   "source": [
    "The second check uses the Hermite path on a series with a missing value in one channel just before row $k$\n",
    "(at row $k - 1$, sometimes $k - 2$ too). Predict, then read your `first`: a missing value is filled by\n",
    "interpolating between its channel's neighbours, and one of them is $x_k$."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "d9386c6a",
   "metadata": {
    "nodecourse": {
     "check": "missing-lookahead"
    }
   },
   "outputs": [],
   "source": [
    "# NBVAL_CHECK_OUTPUT\n",
    "from nodecourse.course.tasks import self_check\n",
    "\n",
    "self_check(\"11\", \"missing-lookahead\", globals())"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python"
  },
  "nodecourse": {
   "built": {
    "02e6973f": "794f8b8eeb01311b",
    "057c42ac": "a81e038d2bc201f2",
    "10488514": "0e1b354b427f2954",
    "183337b5": "4b6345586667148d",
    "1c401ba1": "de958170f1f51cf6",
    "1e2e3cfc": "50371f0cf81ef7b7",
    "21114798": "ffe9a3380900c372",
    "32736de1": "d05f6ad1d98e512e",
    "51560883": "8e0efc323e7b90c0",
    "5ae9c232": "2e70fe9d54f2ec1a",
    "6b0b18b5": "2d1d617eac9cb4e7",
    "8e9ab808": "e27daba78fcfd435",
    "8f0c0d79": "763995a7ff3ce532",
    "a085cc06": "0ee26c8e5fc0a9b6",
    "b788b4b7": "064d39f45ef45a6d",
    "c134f153": "4a1514b597c8be15",
    "cc680fdd": "8eba22eb9e20a0e4",
    "d0cb565f": "a443537978399cf4",
    "d48f55f6": "df41750246e275be",
    "d9386c6a": "e714257a72e881a5",
    "e08d1a06": "c3b2c6d861ef9361",
    "f7b94d72": "f66fd0c6e0795817"
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}""",
}
