"""``naiad analyze``: search a model's configurations for the fastest one within a
latency budget, as Triton's Model Analyzer does, and write a report.

:mod:`.command` declares the flags; the work is in the modules it imports when run.
"""
