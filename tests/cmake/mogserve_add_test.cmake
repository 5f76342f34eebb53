# mogserve_add_test(): one GoogleTest executable of the test suites, built and registered the same
# way everywhere — the project's warnings, GTest::gtest_main, each TEST discovered as a CTest test
# with its label.
#
#   mogserve_add_test(<target>
#     SOURCES <file>...         the test's sources
#     [LIBS <target>...]        linked PRIVATE, before GTest::gtest_main
#     [LABELS <label>]          the CTest label (default: unit)
#     [DEFINITIONS <def>...]    compile definitions (MOGSERVE_TEST_DATA_DIR="..." ...)
#     [INCLUDES <dir>...]       include directories
#     [DEPENDS <target>...]     built first (the mogserve binary, the video clips)
#     [PROPERTIES <key> <value>...]  more properties of each discovered test (FIXTURES_REQUIRED,
#                                    TIMEOUT)
#     [DISCOVERY_TIMEOUT <s>])  seconds the test binary may take to list its tests (default 60)
include(GoogleTest)

function(mogserve_add_test target)
  cmake_parse_arguments(T "" "LABELS;DISCOVERY_TIMEOUT"
                        "SOURCES;LIBS;DEFINITIONS;INCLUDES;DEPENDS;PROPERTIES" ${ARGN})
  if(NOT T_SOURCES)
    message(FATAL_ERROR "mogserve_add_test(${target}): SOURCES is empty")
  endif()
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mogserve_add_test(${target}): unknown arguments ${T_UNPARSED_ARGUMENTS}; "
                        "allowed: SOURCES LIBS LABELS DEFINITIONS INCLUDES DEPENDS PROPERTIES "
                        "DISCOVERY_TIMEOUT")
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_DISCOVERY_TIMEOUT)
    set(T_DISCOVERY_TIMEOUT 60)
  endif()
  add_executable(${target} ${T_SOURCES})
  target_compile_options(${target} PRIVATE ${MOGSERVE_WARNINGS})
  target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest_main)
  # tests/ itself: the header-only helpers in tests/support/ (cpu_skip.h).
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  if(T_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${T_DEFINITIONS})
  endif()
  if(T_INCLUDES)
    target_include_directories(${target} PRIVATE ${T_INCLUDES})
  endif()
  if(T_DEPENDS)
    add_dependencies(${target} ${T_DEPENDS})
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT ${T_DISCOVERY_TIMEOUT}
                       PROPERTIES LABELS "${T_LABELS}" ${T_PROPERTIES})
endfunction()
