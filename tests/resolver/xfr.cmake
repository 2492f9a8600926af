# SPDX-License-Identifier: BSD-3-Clause
# Policy-zone transfers: the IXFR applier (rpz_ixfr.c) and TSIG (tsig.c), each against ldns
# as an independent maker of records and signatures; the `ixfr` fuzz target over replies.
partdns_unit_test(test_rpz_ixfr ${CMAKE_CURRENT_LIST_DIR}/test_rpz_ixfr.c partdns_resolver PkgConfig::LDNS)
partdns_unit_test(test_tsig ${CMAKE_CURRENT_LIST_DIR}/test_tsig.c partdns_resolver PkgConfig::LDNS)
partdns_fuzz_target(ixfr ${CMAKE_CURRENT_LIST_DIR}/fuzz_ixfr.c ${CMAKE_CURRENT_LIST_DIR}/corpus/ixfr partdns_resolver)
