B=/tmp/cuwrap-build
# Every GPU-capable test executable (not the CTest discovery files beside them).
find $B/tests -maxdepth 1 -type f -executable -regex '.*/\(generated\|runtime\)_test_[a-z_]*' -printf '%f\n' | sort > /tmp/tests.txt
run_one() { t=$1; timeout 240 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 /tmp/cuwrap-build/tests/$t > $OUT/mc_$t.log 2>&1; rc=$?; echo "$t rc=$rc $(grep -E 'ERROR SUMMARY' $OUT/mc_$t.log | tail -1) $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/mc_$t.log | tr '\n' ' ')"; }
export -f run_one
xargs -P4 -I{} bash -c 'run_one {}' < /tmp/tests.txt > $OUT/memcheck-summary.txt
cat $OUT/memcheck-summary.txt
mkdir -p $OUT/mc && mv $OUT/mc_*.log $OUT/mc/ 2>/dev/null; tar czf $OUT/memcheck-logs.tgz -C $OUT mc && rm -rf $OUT/mc
