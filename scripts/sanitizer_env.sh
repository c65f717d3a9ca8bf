# Sourced: cuwrap_sanitizer_env <build-dir> exports the ASan, LSan and UBSan settings that
# every run of a sanitized build's programs uses (scripts/sanitize.sh, and scripts/test.sh
# for the emulated drivers and the bindings it generates with that build's cuwrap-gen).
#
# The CUDA libraries are not instrumented and keep allocations for the process's life:
# their leaks are not cuwrap's; nor is what OpenSSL's libcrypto keeps for the process's
# life once loaded (the program cache's SHA-256; ProgramCacheDigest.*); nor are those of
# Mesa's EGL and GL drivers, which the headless GL tests keep loaded
# (tests/support/headless_gl.hpp) so that they can be named; nor libclang's (the
# generator); nor the one block libctemplate allocates itself when asked for a template
# file that does not exist (Render.MissingTemplateIsReported; the stack ends in
# libctemplate, which clang's LeakSanitizer reports and GCC's did not).
# protect_shadow_gap=0 lets the CUDA driver map the address ranges it needs.
# check_printf=0: libnvJitLink formats its error log with vsnprintf from frames ASan cannot
# see, which the printf interceptor misreads as a stack-buffer-overflow
# (Linker.UndefinedSymbolThrowsWithTheLog). A variable already set is kept.
cuwrap_sanitizer_env() {
  local suppressions="$1/lsan.supp"
  printf '%s\n' "leak:libcuda.so" "leak:libnvrtc" "leak:libnvJitLink" "leak:libnvidia-" \
    "leak:libclang" "leak:libLLVM" "leak:libcrypto" "leak:libEGL_mesa" "leak:_dri.so" \
    "leak:libgallium" "leak:libglapi" "leak:libGLX_mesa" "leak:libctemplate" >"$suppressions"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:check_printf=0:detect_leaks=1:halt_on_error=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$suppressions:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
}
