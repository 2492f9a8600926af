# SPDX-License-Identifier: BSD-3-Clause
# Tests of partdnsctl: a shell script driving the binary (temp dirs, a test config,
# a fake control server when python3 exists), and a fuzz target for the import format.
find_program(BASH_PROGRAM bash REQUIRED)
add_test(NAME test_ctl COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_SOURCE_DIR}/test_ctl.sh
  $<TARGET_FILE:partdnsctl>)
set_tests_properties(test_ctl PROPERTIES LABELS tools TIMEOUT 120
  ENVIRONMENT "PARTDNS_TEST_DATA=${CMAKE_CURRENT_SOURCE_DIR}")
partdns_fuzz_target(ctl_import ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_ctl_import.c
  ${CMAKE_CURRENT_SOURCE_DIR}/corpus_ctl_import partdns_ctl)
