"""``naiad optimize``: a faster copy of an ONNX model, checked before it is written.

:mod:`.command` declares the flags; the work is in the modules it imports when run.
"""
