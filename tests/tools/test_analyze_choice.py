"""How ``naiad analyze`` picks its configuration: not a mean that wins by less than
the noise of repeated sweeps, but the simplest of those within it, under the
latency budget, with the reason and the excluded configurations in the report."""

from __future__ import annotations

import pytest

from naiad.tools.analyze.measure import combined
from naiad.tools.analyze.objective import Constraints, choose, chosen, simplicity
from naiad.tools.analyze.report import Analysis, render
from naiad.tools.analyze.results import Point, Trial
from naiad.tools.analyze.space import Candidate
from naiad.tools.confidence import mean_interval

pytestmark = pytest.mark.unit


def trial(number: int, *points: tuple[int, float, float], **knobs: object) -> Trial:
    """A trial of (concurrency, throughput, p99 us) points, each measured once."""
    return Trial(number, Candidate(**knobs),  # type: ignore[arg-type]
                 [Point(c, t, p99 / 2, p99 * 0.8, p99) for c, t, p99 in points])  # fmt: skip


def noisy(number: int, throughput: float, ci: float, p99: float, **knobs: object) -> Trial:
    """A trial of one point measured over repeats: its throughput +- the 95% half-width."""
    point = Point(4, throughput, p99 / 2, p99 * 0.8, p99, repeats=3, throughput_ci=ci)
    return Trial(number, Candidate(**knobs), [point])  # type: ignore[arg-type]


def test_within_noise_the_simpler_configuration_wins_and_the_report_says_why() -> None:
    # The case: 47.3 against 45.3 infer/s, the higher with 4.8x the p99.
    busy = noisy(1, 47.3, 1.8, 48_000, instances=4, dynamic_batching=True, max_batch_size=16,
                 max_queue_delay_us=1000)  # fmt: skip
    plain = noisy(2, 45.3, 1.5, 10_000, instances=1, max_batch_size=16)
    choice = choose([busy, plain], Constraints())
    assert choice.trial is plain and choice.top is busy and choice.ties == [busy, plain]
    assert choice.reason(Constraints()) == (
        "within the noise of the highest, #1 instances=4 batch=16 dyn=on delay=1000us "
        "(47.3 ± 1.8 infer/s against 45.3 ± 1.5 infer/s), and simpler"
    )
    # Beyond the noise the higher one wins, and says so.
    sure = noisy(1, 60.0, 1.0, 48_000, instances=4)
    choice = choose([sure, plain], Constraints())
    assert choice.trial is sure and choice.ties == [sure]
    assert choice.reason(Constraints()).endswith("beyond the noise of the others")
    # Without repeats there is no noise estimate: only an exact tie is one.
    once = [trial(1, (1, 47.3, 500), instances=2), trial(2, (1, 45.3, 400))]
    assert chosen(once, Constraints()) is once[0]
    assert chosen([trial(1, (1, 45.3, 500), instances=2), trial(2, (1, 45.3, 900))],
                  Constraints()).number == 2  # fmt: skip


def test_simpler_means_fewer_instances_then_no_or_smaller_batching_then_default_threads() -> None:
    order = [
        Candidate(instances=1, max_batch_size=16),
        Candidate(instances=1, dynamic_batching=True, max_batch_size=4),
        Candidate(instances=1, dynamic_batching=True, max_batch_size=16),
        Candidate(instances=1, dynamic_batching=True, max_batch_size=16, max_queue_delay_us=100),
        Candidate(
            instances=1,
            dynamic_batching=True,
            max_batch_size=16,
            max_queue_delay_us=100,
            intra_op_threads=1,
        ),  # fmt: skip
        Candidate(instances=2),
    ]
    assert sorted(order, key=simplicity) == order
    # Equally simple within noise: the lower p99.
    a = noisy(1, 100.0, 5.0, 9000, instances=2)
    b = noisy(2, 99.0, 5.0, 3000, instances=2, intra_op_threads=0)
    assert choose([a, b], Constraints()).trial is b


def test_the_latency_budget_excludes_and_names_what_it_excluded() -> None:
    pytest.importorskip(
        "matplotlib", reason="the report draws its charts with matplotlib (naiad[tools])"
    )
    fast_but_slow_p99 = noisy(1, 90.0, 1.0, 20_000, instances=2)
    within = noisy(2, 50.0, 1.0, 4_000)
    budget = Constraints(latency_budget_us=10_000)
    choice = choose([fast_but_slow_p99, within, Trial(3, Candidate(), error="x")], budget)
    assert choice.trial is within and choice.excluded == [fast_but_slow_p99]
    analysis = Analysis("m", "brute", budget, [fast_but_slow_p99, within], planned=2,
                        grid_size=2, chosen=within, choice=choice)  # fmt: skip
    page = render(analysis)
    assert "Excluded by the constraints (p99 &lt;= 10 ms), at every concurrency:" in page
    assert "#1 instances=2: lowest p99 20.00 ms, at most 90.0 infer/s" in page
    assert "Why: highest throughput (50.0 ± 1.0 infer/s), beyond the noise" in page
    assert "50.0 ± 1.0" in page


def test_repeated_sweeps_combine_into_a_mean_and_its_interval() -> None:
    repeats = [Point(8, t, 100, 200, p99, server_cpu_percent=cpu, rss_mb=rss)
               for t, p99, cpu, rss in ((100, 900, 50, 80), (110, 1100, None, 90))]  # fmt: skip
    point = combined(repeats)
    assert (point.concurrency, point.throughput, point.p99_us) == (8, 105, 1000)
    # t(1 df) = 12.706; sd of (100, 110) = 7.071; half = 12.706 * 7.071 / sqrt(2)
    assert point.throughput_ci == pytest.approx(63.53, abs=0.01)
    assert point.repeats == 2 and point.server_cpu_percent == 50 and point.rss_mb == 90
    assert mean_interval([5.0]) == (5.0, 0.0) and mean_interval([]) == (0.0, 0.0)
