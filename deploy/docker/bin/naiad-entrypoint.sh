#!/bin/sh
# The images' ENTRYPOINT, by the docker-library convention, so that a container spec
# written for Triton's image runs with only the image swapped:
#   docker run IMAGE --model-repository=/models ...   options: `naiad serve` with them
#   args: [tritonserver, --model-store=/mnt/models]   a command (KServe's Triton runtime,
#                                                     NVIDIA's Helm charts): run as given
# exec, so the server is PID 1 and gets SIGTERM (docker stop, Kubernetes) to drain on.
set -e
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
    set -- naiad serve "$@"
fi
exec "$@"
