# SPDX-License-Identifier: BSD-3-Clause
# Tests of the daemon's own pieces: EDNS-domain matching, queues, routing and the cache value
# format, the query walk (query.c, no sockets) and the EDNS iteration step (canned packets).
add_library(partdns_test_fixtures STATIC ${PROJECT_SOURCE_DIR}/tests/fixtures/domains_store.c
  ${PROJECT_SOURCE_DIR}/tests/fixtures/messages.c)
target_link_libraries(partdns_test_fixtures PUBLIC partdns_resolver PkgConfig::LDNS PRIVATE partdns_warnings)
partdns_unit_test(test_domains ${CMAKE_CURRENT_LIST_DIR}/test_domains.c partdns_test_fixtures)
partdns_unit_test(test_mq ${CMAKE_CURRENT_LIST_DIR}/test_mq.c partdns_resolver)
partdns_unit_test(test_uloop ${CMAKE_CURRENT_LIST_DIR}/test_uloop.c partdns_resolver)
partdns_unit_test(test_ubctx ${CMAKE_CURRENT_LIST_DIR}/test_ubctx.c partdns_resolver)
# ldns is used in the tests only, as an independent builder and reader of messages.
partdns_unit_test(test_route ${CMAKE_CURRENT_LIST_DIR}/test_route.c partdns_test_fixtures PkgConfig::LDNS)
partdns_unit_test(test_classify ${CMAKE_CURRENT_LIST_DIR}/test_classify.c partdns_resolver)
partdns_unit_test(test_query ${CMAKE_CURRENT_LIST_DIR}/test_query.c partdns_test_fixtures PkgConfig::LDNS)
partdns_unit_test(test_edns_iter ${CMAKE_CURRENT_LIST_DIR}/test_edns_iter.c partdns_test_fixtures)
partdns_fuzz_target(upstream ${CMAKE_CURRENT_LIST_DIR}/fuzz_upstream.c ${CMAKE_CURRENT_LIST_DIR}/corpus/upstream
  partdns_resolver)
partdns_unit_test(test_ratelimit ${CMAKE_CURRENT_LIST_DIR}/test_ratelimit.c partdns_resolver)
partdns_unit_test(test_topk ${CMAKE_CURRENT_LIST_DIR}/test_topk.c partdns_resolver)
partdns_unit_test(test_edns_budget ${CMAKE_CURRENT_LIST_DIR}/test_edns_budget.c partdns_resolver)
# edns.tier: partition ownership by rendezvous hashing, node health.
partdns_unit_test(test_tier ${CMAKE_CURRENT_LIST_DIR}/test_tier.c partdns_resolver)
# DNSSEC validation of EDNS-pool answers: messages and keys made with ldns per run.
partdns_unit_test(test_val ${CMAKE_CURRENT_LIST_DIR}/test_val.c partdns_resolver PkgConfig::LDNS)
partdns_fuzz_target(val ${CMAKE_CURRENT_LIST_DIR}/fuzz_val.c ${CMAKE_CURRENT_LIST_DIR}/corpus/val partdns_resolver)
partdns_fuzz_target(rpz ${CMAKE_CURRENT_LIST_DIR}/fuzz_rpz.c ${CMAKE_CURRENT_LIST_DIR}/corpus/rpz partdns_resolver)
partdns_unit_test(test_rpz ${CMAKE_CURRENT_LIST_DIR}/test_rpz.c partdns_resolver)
