# SPDX-License-Identifier: BSD-3-Clause
# Tests of tools/gen/partdns-gen: its output loads into a ptable (no duplicate,
# no host bits, 13 cities), is byte-identical per seed, and its YAML has the
# partitions-section shape. Included from tests/tools/CMakeLists.txt.
if(TARGET partdns-gen)
  partdns_unit_test(test_gen ${CMAKE_CURRENT_LIST_DIR}/test_gen.c partdns_partition PkgConfig::YAML)
  target_compile_definitions(test_gen PRIVATE PARTDNS_GEN_PATH="$<TARGET_FILE:partdns-gen>")
  add_dependencies(test_gen partdns-gen)
  # -V/--version and -h/--help as on partdns and partdnsctl
  set(gen $<TARGET_FILE:partdns-gen>)
  add_test(NAME gen_flags COMMAND sh -c "${gen} -V && ${gen} --version && ${gen} -h && ${gen} --help")
  string(REPLACE "." "[.]" ver "${PROJECT_VERSION}")
  set_tests_properties(gen_flags PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "^partdns-gen ${ver}\npartdns-gen ${ver}\nusage: partdns-gen.*-V, --version.*usage:")
endif()
