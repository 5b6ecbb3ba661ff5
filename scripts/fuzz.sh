#!/usr/bin/env bash
# libFuzzer (with AddressSanitizer) on the code that reads hostile input:
#   scripts/fuzz.sh TARGET [SECONDS]     TARGET: protocol | config | text | speech | all
# protocol: one network line through the codec, signatures, framer; config: crier.conf;
# text: sanitizer → template → number words; speech: that, then espeak-ng with a deadline.
# Seeds: Tests/fuzz/corpus/TARGET (in git). New inputs go to .build/fuzz/corpus/TARGET (not in
# git). A crash leaves .build/fuzz/crash-TARGET-*; reproduce with
#   CRIER_FUZZ_TARGET=TARGET .build/fuzz/crier-fuzz FILE
# then add the input as a regression test (Tests/CrierCoreTests/FuzzRegressionTests.swift).
# Exit status: 0 no crash, 1 crash or build failure, 2 usage.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"

target="${1:-}"; seconds="${2:-60}"
case "$target" in
  protocol|config|text|speech) ;;
  all) for t in protocol config text speech; do "$0" "$t" "$seconds"; done; exit 0 ;;
  *) echo "usage: scripts/fuzz.sh protocol|config|text|speech|all [SECONDS]" >&2; exit 2 ;;
esac

# What it needs: the Swift toolchain's own libFuzzer runtime (ships with swift.org toolchains,
# no clang package needed) and espeak-ng for the speech target (scripts/setup.sh installs it).
bash scripts/setup.sh
rt="$(dirname "$(dirname "$(command -v swiftc)")")/lib/swift/clang/lib/linux"
if ! ls "$rt"/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  echo "fuzz: this Swift toolchain has no libFuzzer runtime in $rt; use a swift.org Linux toolchain" >&2
  exit 1
fi

out=.build/fuzz
bin=$out/crier-fuzz
mkdir -p "$out/corpus/$target"
sources=$(find Sources/CrierCore -name '*.swift' | sort)
harness=$(ls Tests/fuzz/targets/*.swift)
if [ ! -x "$bin" ] || [ -n "$(find $sources $harness -newer "$bin" 2>/dev/null | head -1)" ]; then
  echo "== building $bin (CrierCore + Tests/fuzz/targets, -sanitize=fuzzer,address)"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  swiftc -swift-version 6 -O -g -parse-as-library -module-name CrierFuzz \
    -sanitize=fuzzer,address -I Sources/CEspeakNG \
    $sources $harness -o "$bin" 2> >(grep -v "Cannot export local symbol" >&2)
  echo "   built in $(( $(date +%s) - t0 )) s"
fi

opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$out/crash-$target-")
case "$target" in
  protocol) opts+=(-max_len=17000 -dict=Tests/fuzz/protocol.dict) ;;
  config)   opts+=(-max_len=8192) ;;
  text)     opts+=(-max_len=4096) ;;
  speech)   opts+=(-max_len=1024) ;;
esac
echo "== fuzzing $target for $seconds s"
set +e
CRIER_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" \
  "$bin" "${opts[@]}" "$out/corpus/$target" "Tests/fuzz/corpus/$target" 2>&1 | tee "$out/$target.log" \
  | grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|stat::|ERROR|SUMMARY|Test unit written|deadly signal|==[0-9]+==" 
st=${PIPESTATUS[0]}
set -e
if [ "$st" != 0 ]; then
  echo "fuzz: $target FAILED (exit $st); see $out/$target.log and $out/crash-$target-*" >&2
  exit 1
fi
echo "fuzz: $target ok ($(ls "$out/corpus/$target" | wc -l) inputs in the working corpus)"
