"""total = price * quantity, row by row."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            price = pb_utils.get_input_tensor_by_name(request, "price").as_numpy()
            quantity = pb_utils.get_input_tensor_by_name(request, "quantity").as_numpy()
            total = pb_utils.Tensor("total", price * quantity)
            responses.append(pb_utils.InferenceResponse([total]))
        return responses
