# SPDX-License-Identifier: BSD-3-Clause
# resolver/cache: unit test (ctest) and a micro-benchmark (not a test; run by hand).
partdns_unit_test(test_cache ${CMAKE_CURRENT_LIST_DIR}/test_cache.c partdns_resolver Threads::Threads)

# bench_cache [threads] [seconds]: hit/miss/insert throughput, see bench/RESULTS.md "## Cache".
# bench_cache_rwlock is the same against a rwlock build of the cache, to re-check
# the lock choice documented in resolver/cache.c.
add_executable(bench_cache ${CMAKE_CURRENT_LIST_DIR}/bench_cache.c)
target_link_libraries(bench_cache PRIVATE partdns_resolver Threads::Threads partdns_warnings)
add_executable(bench_cache_rwlock ${CMAKE_CURRENT_LIST_DIR}/bench_cache.c
  ${PROJECT_SOURCE_DIR}/resolver/cache.c)
target_compile_definitions(bench_cache_rwlock PRIVATE CACHE_RWLOCK)
target_link_libraries(bench_cache_rwlock PRIVATE Threads::Threads partdns_warnings)

# -DFUZZ=ON compiles every library with -fsanitize=fuzzer-no-link; the root
# CMakeLists doesn't link that runtime into plain executables, so without this
# they fail to link (__sanitizer_cov_*). Harmless once the root does it.
if(FUZZ)
  foreach(t test_cache bench_cache bench_cache_rwlock)
    target_link_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
  endforeach()
endif()
