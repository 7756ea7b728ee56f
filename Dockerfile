# syntax=docker/dockerfile:1
# naiad on CPU: a slim, non-root image that serves a Triton model repository.
#
#   docker build -t naiad:cpu .
#   docker run --rm -p 8000:8000 -p 8001:8001 -p 8002:8002 --shm-size=1g \
#       -v "$PWD/examples/model_repository:/models:ro" naiad:cpu
#
# Arguments after the image name replace CMD. Options are `naiad serve` flags, e.g.
#   docker run ... naiad:cpu --model-repository=s3://bucket/models --model-control-mode=poll
# (credentials through the usual AWS_* / GOOGLE_APPLICATION_CREDENTIALS / AZURE_* env);
# a command runs as given, and `tritonserver` is `naiad serve`, as in Triton's image:
#   docker run ... naiad:cpu tritonserver --model-repository=/models
# docs/deploying.md has the GPU variant (deploy/docker/Dockerfile.gpu) and Kubernetes.

# One tag for both stages; pin a digest (python:3.11-slim-bookworm@sha256:...) in
# production so a rebuild cannot change the base under you.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Build the wheel in a throwaway stage, so the final image has no build tools and no source.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
# Extras baked in: object-store repositories work out of the box. Add framework
# backends as needed, e.g. --build-arg NAIAD_EXTRAS=s3,gcs,azure,torch,fil
ARG NAIAD_EXTRAS=s3,gcs,azure
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NAIAD_HEALTH_URL=http://127.0.0.1:8000/v2/health/ready
COPY --from=build /wheels /wheels
RUN wheel="$(ls /wheels/naiad-*.whl)" \
    && pip install --no-cache-dir "${wheel}${NAIAD_EXTRAS:+[${NAIAD_EXTRAS}]}" \
    && rm -rf /wheels \
    && groupadd --gid 1000 naiad \
    && useradd --uid 1000 --gid 1000 --create-home --shell /usr/sbin/nologin naiad \
    && mkdir /models \
    && chown naiad:naiad /models

# The entrypoint runs `naiad serve` with arguments that are options, and any other
# command as given; `tritonserver` is `naiad serve`, so container specs written for
# Triton's image (KServe's runtime, NVIDIA's Helm charts) run unchanged.
COPY --chmod=0755 deploy/docker/bin/ /usr/local/bin/

# A numeric user, so Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
USER 1000:1000
WORKDIR /home/naiad
EXPOSE 8000 8001 8002

# Ready, not live: a container is healthy once its models are loaded. Python's
# urllib, because the slim base has no curl; NAIAD_HEALTH_URL follows --http-port.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(os.environ['NAIAD_HEALTH_URL'], timeout=4)"]

# SIGTERM (docker stop, Kubernetes) drains in-flight requests for up to
# --exit-timeout-secs (30 s) before exiting.
STOPSIGNAL SIGTERM
ENTRYPOINT ["naiad-entrypoint.sh"]
CMD ["--model-repository=/models"]
