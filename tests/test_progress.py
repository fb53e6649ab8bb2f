"""`Progress`: rate and ETA lines in logs, a bar on terminals."""

import io

from albert_tf.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_a_line_with_rate_and_eta_and_one_at_the_end(monkeypatch):
    clock = iter([0.0, 10.0, 20.0])
    monkeypatch.setattr("albert_tf.progress.time.monotonic", lambda: next(clock))
    log = io.StringIO()
    progress = Progress(300, "predict dev", "examples", stream=log, interval=5.0)
    progress.update(100)  # t=10: a line (rate 10/s, 200 left: 20 s)
    progress.close()  # t=20, 100 done
    lines = log.getvalue().splitlines()
    assert lines[0] == "predict dev: 100/300 examples, 10.0/s, ETA 0:20"
    assert lines[1].startswith("predict dev: 100/300 examples, 5.0/s, ETA 0:40")


def test_slow_units_report_the_time_each_took_not_a_zero_rate(monkeypatch):
    clock = iter([0.0, 300.0, 600.0, 600.0, 600.0])
    monkeypatch.setattr("albert_tf.progress.time.monotonic", lambda: next(clock))
    log = io.StringIO()
    progress = Progress(3, "seeds", "done", stream=log, interval=0)
    progress.update()  # t=300: the first of three runs
    progress.update()  # t=600
    assert log.getvalue().splitlines() == ["seeds: 1/3 done, 5:00 each, ETA 10:00",
                                           "seeds: 2/3 done, 5:00 each, ETA 5:00"]
    assert Progress(3, "seeds", "done", stream=log).line() == "seeds: 0/3 done"


def test_the_end_is_said_once_when_the_last_update_said_it(monkeypatch):
    clock = iter([0.0, 60.0, 120.0, 120.0])
    monkeypatch.setattr("albert_tf.progress.time.monotonic", lambda: next(clock))
    log = io.StringIO()
    with Progress(2, "seeds", "done", stream=log, interval=0) as progress:
        progress.update()
        progress.update()
    assert log.getvalue().splitlines() == ["seeds: 1/2 done, 1:00 each, ETA 1:00",
                                           "seeds: 2/2 done, 1:00 each, 2:00"]


def test_finished_work_reports_its_duration_and_disabled_is_silent():
    log = io.StringIO()
    with Progress(2, "featurize train", "examples", stream=log, interval=1e9) as progress:
        progress.update(2)
    assert log.getvalue().startswith("featurize train: 2/2 examples, ")
    assert log.getvalue().rstrip().endswith(("0:00", "0:01"))
    quiet = io.StringIO()
    with Progress(2, "x", stream=quiet, enabled=False) as progress:
        progress.update(2)
    assert quiet.getvalue() == ""


def test_a_terminal_gets_a_bar():
    screen = Terminal()
    with Progress(4, "predict dev", "examples", stream=screen) as progress:
        progress.update(4)
    assert "predict dev" in screen.getvalue() and "4/4" in screen.getvalue()


def test_a_notebook_gets_the_notebook_bar(monkeypatch):
    import tqdm.auto

    made = []

    class Bar(tqdm.auto.tqdm):
        def __init__(self, **kwargs):
            made.append(kwargs)
            super().__init__(file=io.StringIO(), **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    monkeypatch.setattr("albert_tf.progress.in_notebook", lambda: True)
    log = io.StringIO()  # not a terminal: outside a notebook, lines
    with Progress(3, "predict dev", "examples", stream=log) as progress:
        progress.update(3)
        assert progress._bar.n == 3
    assert made == [{"total": 3, "initial": 0, "desc": "predict dev", "unit": " examples",
                     "leave": True}]
