#!/usr/bin/env bash
# The reference tools that naiad's comparison tests and benchmarks measure against, installed
# from the package registries only:
#
#   bin/tritonserver    NVIDIA Triton Inference Server 2.51 (CPU, Python backend), the binary
#                       that the nvidia-pytriton 0.7.0 wheel carries
#   bin/perf_analyzer   NVIDIA's load generator, from the tritonclient 2.41.0 wheel (the last
#                       one that ships it), with the CUDA runtime library it links
#
# into ${NAIAD_REFERENCE_HOME:-~/.cache/naiad-reference}, where tests/support/reference.py and
# benchmarks/common.py look.  Tests that need the tools skip without them.
#
# Usage:  scripts/setup-reference.sh            (again: finished steps are skipped)
#         NAIAD_REFERENCE_HOME=/opt/ref scripts/setup-reference.sh
#
# Needs python3.11 (Triton's Python-backend stub embeds libpython3.11) and, for the system
# libraries, root with apt-get; without root it names the packages to install and goes on.
set -euo pipefail

home="${NAIAD_REFERENCE_HOME:-$HOME/.cache/naiad-reference}"
python="${REFERENCE_PYTHON:-python3.11}"
pytriton="nvidia-pytriton==0.7.0"
client_with_pa="tritonclient==2.41.0"
cudart="nvidia-cuda-runtime-cu12==12.9.79"

say() { echo "setup-reference: $*" >&2; }
step_done() { [ -e "$home/.step-$1" ]; }
finish_step() { touch "$home/.step-$1"; }

mkdir -p "$home/bin"
command -v "$python" >/dev/null || { say "$python is needed (Triton's stub links libpython3.11)"; exit 1; }

# -- system libraries: libb64 for perf_analyzer, libpython3.11 for the stub, wrk for benchmarks
missing=()
for pkg in libb64-0d libpython3.11; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v wrk >/dev/null || missing+=(wrk)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "please install these system packages, then run again: ${missing[*]}"
  fi
fi

# -- Triton, from the pytriton wheel, in a venv of its own
venv="$home/venv-triton"
if ! step_done triton; then
  say "installing $pytriton into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "$pytriton" numpy
  finish_step triton
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
server_root="$site/pytriton/tritonserver"
# The wheel keeps one stub per Python version; the backend looks for it beside itself.
if [ ! -x "$server_root/backends/python/triton_python_backend_stub" ]; then
  cp "$server_root/python_backend_stubs/3.11/triton_python_backend_stub" \
     "$server_root/backends/python/triton_python_backend_stub"
fi
cat > "$home/bin/tritonserver" <<'EOF'
#!/usr/bin/env bash
# Triton 2.51 from the pytriton wheel; paths are found from this file, so the folder can move.
ref="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
site="$(echo "$ref"/venv-triton/lib/python3.11/site-packages)"
export LD_LIBRARY_PATH="$site/nvidia_pytriton.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The stub's embedded interpreter finds its prefix through the first python3 on PATH: the venv's,
# so models import the venv's numpy.
export PATH="$ref/venv-triton/bin:$PATH"
exec "$site/pytriton/tritonserver/bin/tritonserver" \
  --backend-directory "$site/pytriton/tritonserver/backends" "$@"
EOF
chmod +x "$home/bin/tritonserver"

# -- perf_analyzer, unpacked from the two wheels that carry it and its libcudart
pa_dir="$home/perf_analyzer"
if ! step_done perf_analyzer; then
  say "unpacking perf_analyzer from $client_with_pa and $cudart"
  downloads="$(mktemp -d)"
  trap 'rm -rf "$downloads"' EXIT
  "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: \
    --platform manylinux1_x86_64 --python-version 3.11 -d "$downloads" "$client_with_pa"
  "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$downloads" "$cudart"
  rm -rf "$pa_dir"
  mkdir -p "$pa_dir"
  "$venv/bin/python" - "$downloads" "$pa_dir" <<'EOF'
import pathlib
import sys
import zipfile

downloads, target = map(pathlib.Path, sys.argv[1:])
for wheel in downloads.glob("*.whl"):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith("/bin/perf_analyzer") or "/cuda_runtime/lib/" in name:
                archive.extract(name, target)
EOF
  chmod +x "$pa_dir"/*/data/bin/perf_analyzer
  finish_step perf_analyzer
fi
cat > "$home/bin/perf_analyzer" <<'EOF'
#!/usr/bin/env bash
# perf_analyzer from the tritonclient 2.41.0 wheel, with libcudart from its own wheel.
ref="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LD_LIBRARY_PATH="$ref/perf_analyzer/nvidia/cuda_runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$(echo "$ref"/perf_analyzer/*/data/bin/perf_analyzer)" "$@"
EOF
chmod +x "$home/bin/perf_analyzer"

# -- both must run: each prints its usage (perf_analyzer then exits non-zero, hence || true)
usage="$("$home/bin/perf_analyzer" --help 2>&1 || true)"
grep -q -- "--concurrency-range" <<<"$usage" || { say "perf_analyzer does not start"; exit 1; }
usage="$("$home/bin/tritonserver" --help 2>&1 || true)"
grep -q -- "--model-repository" <<<"$usage" || { say "tritonserver does not start"; exit 1; }
say "ready: $home/bin/tritonserver and $home/bin/perf_analyzer"
