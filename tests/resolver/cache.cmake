# SPDX-License-Identifier: BSD-3-Clause
# resolver/cache: unit test (ctest) and a micro-benchmark (not a test; run by hand).
partdns_unit_test(test_cache ${CMAKE_CURRENT_LIST_DIR}/test_cache.c partdns_resolver Threads::Threads)

# bench_cache [threads] [seconds]: hit/miss/insert throughput, see bench/RESULTS.md "## Cache".
# bench_cache_rwlock is the same against a rwlock build of the cache, to re-check
# the lock choice documented in resolver/cache/cache.c.
add_executable(bench_cache ${CMAKE_CURRENT_LIST_DIR}/bench_cache.c)
target_link_libraries(bench_cache PRIVATE partdns_resolver Threads::Threads partdns_warnings)
add_executable(bench_cache_rwlock ${CMAKE_CURRENT_LIST_DIR}/bench_cache.c
  ${PROJECT_SOURCE_DIR}/resolver/cache/cache.c)
target_compile_definitions(bench_cache_rwlock PRIVATE CACHE_RWLOCK)
target_link_libraries(bench_cache_rwlock PRIVATE partdns_util Threads::Threads partdns_warnings)
