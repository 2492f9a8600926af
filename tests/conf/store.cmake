# SPDX-License-Identifier: BSD-3-Clause
# Tests of conf/store.c (the LMDB store of EDNS domains); included from CMakeLists.txt.
partdns_unit_test(test_store ${CMAKE_CURRENT_SOURCE_DIR}/test_store.c partdns_conf)
partdns_test_timeout(test_store 120)
partdns_fuzz_target(store_record ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_store_record.c
  ${CMAKE_CURRENT_SOURCE_DIR}/corpus_store_record partdns_conf)
