#!/usr/bin/env bash
# Regenerates the parts of docs that are derived from the code, so they cannot drift:
# the key table in docs/configuration.md and the example config in board/crier.conf.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
swift build -q
BIN="$(swift build --show-bin-path)/crier"
python3 - "$BIN" <<'PY'
import subprocess, sys
bin = sys.argv[1]
table = subprocess.run([bin, "config", "--markdown"], check=True, capture_output=True, text=True).stdout
p = "docs/configuration.md"
s = open(p).read()
a, b = s.index("<!-- keys:begin -->"), s.index("<!-- keys:end -->")
open(p, "w").write(s[:a] + "<!-- keys:begin -->\n" + table + s[b:])
PY
if [ -d board ] && [ -f board/crier.conf ]; then "$BIN" config --example > board/crier.conf; fi
echo "docs regenerated"
