# SPDX-License-Identifier: BSD-3-Clause
# Tests of the daemon's own pieces (EDNS-domain matching, queues).
partdns_unit_test(test_domains ${CMAKE_CURRENT_LIST_DIR}/test_domains.c partdns_resolver)
partdns_unit_test(test_mq ${CMAKE_CURRENT_LIST_DIR}/test_mq.c partdns_resolver)
partdns_unit_test(test_chain ${CMAKE_CURRENT_LIST_DIR}/test_chain.c partdns_resolver)
