# SPDX-License-Identifier: BSD-3-Clause
# Tests of resolver/wire.c: unit tests, the `wire` fuzz target, the malformed-query corpus.
# wire.c is compiled into each executable so these do not wait for the rest of resolver/.
set(WIRE_SOURCE ${PROJECT_SOURCE_DIR}/resolver/wire.c)

# ldns is used in the tests only, as an independent check that our output parses.
partdns_unit_test(test_wire ${CMAKE_CURRENT_SOURCE_DIR}/test_wire.c partdns_mapping PkgConfig::LDNS)
target_sources(test_wire PRIVATE ${WIRE_SOURCE})

partdns_fuzz_target(wire ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wire.c ${CMAKE_CURRENT_SOURCE_DIR}/corpus/wire
  partdns_mapping)
target_sources(replay_wire PRIVATE ${WIRE_SOURCE})
if(FUZZ)
  target_sources(fuzz_wire PRIVATE ${WIRE_SOURCE})
endif()
# The malformed-query corpus (sent to the live daemon by the integration test) replays too.
add_test(NAME replay_wire_malformed COMMAND replay_wire ${CMAKE_CURRENT_SOURCE_DIR}/malformed)
set_tests_properties(replay_wire_malformed PROPERTIES LABELS fuzz)
