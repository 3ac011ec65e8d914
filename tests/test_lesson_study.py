"""The lessons' shared study cache and the Findings base (nodecourse.lessons.study)."""

from dataclasses import dataclass

import pytest

from nodecourse.lessons import study


def test_cached_study_keys_on_bound_arguments_without_progress():
    calls = []

    @study.cached_study
    def measure(n, scale=2, progress=True):
        calls.append((n, scale))
        return n * scale

    assert measure(3) == 6
    assert measure(n=3, scale=2, progress=False) == 6  # same key: defaults filled in, progress left out
    assert calls == [(3, 2)]
    assert measure(3, 5) == 15
    assert measure.cache_size() == 2
    study.clear()
    assert measure.cache_size() == 0
    measure(3)
    assert calls == [(3, 2), (3, 5), (3, 2)]
    assert measure in study.cached_studies()


def test_cached_study_names_an_unhashable_argument():
    @study.cached_study
    def measure(values):
        return sum(values)

    with pytest.raises(TypeError, match="measure: every argument of a cached study must be hashable"):
        measure([1, 2])


def test_findings_render_through_markdown():
    @dataclass(frozen=True)
    class Growth(study.Findings):
        factor: float

        def markdown(self) -> str:
            return f"grew **{self.factor:.1f}x**"

    g = Growth(2.5)
    assert g._repr_markdown_() == "grew **2.5x**" == str(g)
    with pytest.raises(TypeError):
        study.Findings()  # abstract: a findings class must say how it reads


def test_findings_plain_text_is_their_markdown_not_every_field():
    """A saved notebook keeps text/plain beside the Markdown: it must be the sentence, not the dataclass
    repr with every float (lesson 9's audit tables were 100 kB a cell)."""
    from IPython.core.formatters import DisplayFormatter

    @dataclass(frozen=True)
    class Curve(study.Findings):
        values: tuple

        def markdown(self) -> str:
            return f"{len(self.values)} points"

    curve = Curve(tuple(i / 7 for i in range(1000)))
    data, _ = DisplayFormatter().format(curve)
    assert data == {"text/markdown": "1000 points", "text/plain": "1000 points"}
