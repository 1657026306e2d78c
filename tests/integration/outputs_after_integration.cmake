# Included by ctest after the discovered integration tests (see CMakeLists.txt): outputs.schema,
# defined earlier in tests/outputs, waits for every one of them under ctest -j. No list (the test
# binary is not built yet) leaves it unordered rather than failing the whole ctest run.
if(DEFINED integration_test_TESTS)
  set_tests_properties(outputs.schema PROPERTIES DEPENDS "${integration_test_TESTS}")
endif()
