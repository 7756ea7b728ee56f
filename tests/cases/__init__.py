"""Protocol test cases shared by the HTTP and gRPC frontends (data, not tests)."""
