"""Calls the models of app.py over HTTP with tritonclient: python client.py [host:port]."""

import sys

import numpy as np
import tritonclient.http as httpclient

url = sys.argv[1] if len(sys.argv) > 1 else "localhost:8000"
with httpclient.InferenceServerClient(url) as client:

    def infer(model, name, value, datatype):
        tensor = httpclient.InferInput(name, list(value.shape), datatype)
        tensor.set_data_from_numpy(value)
        return client.infer(model, [tensor])

    print(infer("greet", "name", np.array([b"naiad"], dtype=object), "BYTES").as_numpy("output"))
    print(infer("normalize", "x", np.array([[3, 4]], np.float32), "FP32").as_numpy("output"))
    print(infer("linear", "features", np.array([[1, 2, 3]], np.float32), "FP32").as_numpy("score"))
