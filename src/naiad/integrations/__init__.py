"""naiad runners inside other frameworks: FastAPI, BentoML and Gradio (each an extra)."""
