"""``naiad test``: golden requests kept beside each model, and the answers they must get.

A case is a JSON file ``<repository>/<model>/tests/<case>.json`` in perf_analyzer's
input-data format (``data``, and ``validation_data`` for the expected outputs) with a few
naiad keys beside them (tolerances, an expected error, a version, request parameters);
docs/testing.md describes it.  :mod:`.cases` reads the files, :mod:`.compare` judges an
answer, :mod:`.session` sends the cases over each protocol, :mod:`.report` prints the
outcome for a CI log and writes JUnit XML, :mod:`.record` fills in expected outputs.
"""
