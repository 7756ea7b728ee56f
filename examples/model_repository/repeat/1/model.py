"""The decoupled "repeat" model of Triton's Python backend examples."""

import threading
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            delay = pb_utils.get_input_tensor_by_name(request, "DELAY")
            delays = delay.as_numpy() if delay is not None else np.zeros(len(values), np.uint32)
            thread = threading.Thread(
                target=self.respond,
                args=(request.get_response_sender(), values.copy(), delays.copy()),
                daemon=True,
            )
            thread.start()
            # finished threads are dropped, so a long-running server does not keep them all
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        return None

    def respond(self, sender, values, delays):
        for index, value in enumerate(values):
            if index < len(delays) and delays[index]:
                time.sleep(delays[index] / 1000)
            if sender.is_cancelled():
                break
            sender.send(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                        pb_utils.Tensor("IDX", np.array([index], dtype=np.uint32)),
                    ]
                )
            )
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for thread in self.threads:
            thread.join(timeout=10)
