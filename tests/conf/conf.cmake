# SPDX-License-Identifier: BSD-3-Clause
# Tests of the config loader (conf/conf.c and every file below it); included from CMakeLists.txt.
partdns_unit_test(test_conf ${CMAKE_CURRENT_SOURCE_DIR}/test_conf.c partdns_conf)
# The large-include test writes and loads ~120k prefixes; generous for sanitizer builds.
partdns_test_timeout(test_conf 120)
# Every key the schema flags restart is noted by a reload that changes it.
partdns_unit_test(test_conf_restart ${CMAKE_CURRENT_SOURCE_DIR}/test_conf_restart.c partdns_conf)
partdns_fuzz_target(conf ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_conf.c
  ${CMAKE_CURRENT_SOURCE_DIR}/corpus/conf partdns_conf)
