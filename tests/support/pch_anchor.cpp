// The one source of cuwrap_test_pch (tests/CMakeLists.txt): the target exists to build the
// tests' precompiled header, which every test executable reuses.
