#!/usr/bin/env bash
# scripts/fetch_headers.sh against wheels made here (no network, no toolkit): the header
# is taken from */include/<header> of its wheel and written as DEST/<header> (a member
# whose path climbs out of the archive is refused); a file that is not a zip archive,
# or a wheel without the header, leaves the header missing, named, with exit status 1;
# a bad --cuda is refused with status 2.
set -euo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 - "$work/wheels" <<'PY'
import os, sys, zipfile
d = sys.argv[1]
os.makedirs(d)
with zipfile.ZipFile(os.path.join(d, "nvidia_nvml_dev-13.0.39-py3-none-manylinux2014_x86_64.whl"), "w") as z:
    z.writestr("nvidia/cu13/include/nvml.h", "/* the wheel's nvml.h */\n")
    z.writestr("nvidia/cu13/lib/libnvidia-ml.so", "not a header")
with zipfile.ZipFile(os.path.join(d, "nvidia_nvfatbin-13.0.85-py3-none-manylinux2014_x86_64.whl"), "w") as z:
    z.writestr("../../escape/include/nvFatbin.h", "/* climbing */\n")
    z.writestr("nvidia/cu13/lib/libnvfatbin.so.13", "no header in this wheel's include/")
open(os.path.join(d, "nvidia_cufile-1.15.1-py3-none-manylinux2014_x86_64.whl"), "w").write("not a zip")
PY
set +e
out=$(bash "$script" --no-toolkit --no-pip --wheels "$work/wheels" --dest "$work/dest" \
  nvml.h nvFatbin.h cufile.h 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -eq 1 ] || fail "exit status $rc, expected 1 (two headers missing)"
grep -qx '/\* the wheel.s nvml.h \*/' "$work/dest/nvml.h" || fail "nvml.h not extracted"
# The climbing member is refused: nvFatbin.h stays missing, nothing is written outside.
[ ! -e "$work/escape" ] && [ "$(ls "$work/dest")" = nvml.h ] ||
  fail "unexpected files: $(ls "$work/dest")"
grep -q "nvFatbin.h (nvidia-nvfatbin==13.0.\*)" <<<"$out" || fail "nvFatbin.h is not named as missing"
grep -q "not a readable wheel" <<<"$out" || fail "the broken wheel is not named"
grep -q "cufile.h (nvidia-cufile)" <<<"$out" || fail "cufile.h is not named as missing"
set +e
bash "$script" --cuda 13 --no-pip --dest "$work/x" >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "--cuda 13 gave status $rc, expected 2"
echo "PASS"
