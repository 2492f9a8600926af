# SPDX-License-Identifier: BSD-3-Clause
# Tests of partdnsctl: a shell script driving the binary (temp dirs, a test config,
# a fake control server; partdns for its store-directory check), and a fuzz
# target for the import format.
find_program(BASH_PROGRAM bash REQUIRED)
# The fake daemon side of the control socket, on control/server.c like the daemon.
add_executable(fake_control ${CMAKE_CURRENT_SOURCE_DIR}/fake_control.c)
target_link_libraries(fake_control PRIVATE partdns_control partdns_warnings)
# Two halves of one script, run at once (see its PART argument).
foreach(part store rest)
  add_test(NAME test_ctl_${part} COMMAND ${BASH_PROGRAM} ${CMAKE_CURRENT_SOURCE_DIR}/test_ctl.sh
    $<TARGET_FILE:partdnsctl> $<TARGET_FILE:fake_control> $<TARGET_FILE:partdns> ${part})
  set_tests_properties(test_ctl_${part} PROPERTIES LABELS tools
    ENVIRONMENT "PARTDNS_TEST_DATA=${CMAKE_CURRENT_SOURCE_DIR}")
  partdns_test_timeout(test_ctl_${part} 240)
  set_tests_properties(test_ctl_${part} PROPERTIES COST 50) # start early: see tests/integration
endforeach()
partdns_fuzz_target(ctl_import ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_ctl_import.c
  ${CMAKE_CURRENT_SOURCE_DIR}/corpus_ctl_import partdns_ctl)
