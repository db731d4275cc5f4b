# File: tests/tools/check_crds_up_to_date.cmake
#
# ctest drift check: regenerates the CRDs from proto/ into a scratch directory and compares them,
# file by file, with the committed crds/. Fails (FATAL_ERROR) naming every file that differs, is
# missing or is stale, shows a unified diff, and says which command fixes it.
#
# Variables (-D): PROTOC, PLUGIN, PROTO_DIR, PROTO_INCLUDE, PROTOS (':'-separated, relative to
# PROTO_DIR), EXPECTED_DIR (the committed crds/), OUT_DIR (scratch; wiped first).

cmake_minimum_required(VERSION 3.25)

foreach(var PROTOC PLUGIN PROTO_DIR PROTO_INCLUDE PROTOS EXPECTED_DIR OUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_crds_up_to_date.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE ":" ";" proto_list "${PROTOS}")

file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
execute_process(
  COMMAND "${PROTOC}" -I${PROTO_DIR} -I${PROTO_INCLUDE} --plugin=protoc-gen-crd=${PLUGIN}
          --crd_out=${OUT_DIR} ${proto_list}
  WORKING_DIRECTORY "${PROTO_DIR}"
  RESULT_VARIABLE protoc_result
  OUTPUT_VARIABLE protoc_output
  ERROR_VARIABLE protoc_output)
if(NOT protoc_result EQUAL 0)
  message(FATAL_ERROR "protoc-gen-crd failed (${protoc_result}):\n${protoc_output}")
endif()

file(GLOB generated RELATIVE "${OUT_DIR}" "${OUT_DIR}/*.yaml")
file(GLOB committed RELATIVE "${EXPECTED_DIR}" "${EXPECTED_DIR}/*.yaml")
list(SORT generated)
list(SORT committed)
if(NOT generated)
  message(FATAL_ERROR "protoc-gen-crd wrote no files into ${OUT_DIR}")
endif()

find_program(DIFF diff)
set(problems "")
set(diffs "")
foreach(name IN LISTS generated)
  if(NOT name IN_LIST committed)
    string(APPEND problems "  crds/${name} is missing (the protos generate it)\n")
    continue()
  endif()
  file(READ "${OUT_DIR}/${name}" want)
  file(READ "${EXPECTED_DIR}/${name}" have)
  if(NOT want STREQUAL have)
    string(APPEND problems "  crds/${name} differs from what the protos generate\n")
    if(DIFF)
      execute_process(
        COMMAND "${DIFF}" -u --label "crds/${name} (committed)" --label "crds/${name} (generated)"
                "${EXPECTED_DIR}/${name}" "${OUT_DIR}/${name}"
        OUTPUT_VARIABLE one_diff)
      string(APPEND diffs "${one_diff}")
    endif()
  endif()
endforeach()
foreach(name IN LISTS committed)
  if(NOT name IN_LIST generated)
    string(APPEND problems "  crds/${name} is not generated any more (stale)\n")
  endif()
endforeach()

if(problems)
  # NOTICE prints the report verbatim (FATAL_ERROR would re-wrap the diff).
  message(NOTICE
    "crds/ is out of date with proto/:\n${problems}\n${diffs}\n"
    "To fix, regenerate and commit crds/:\n  scripts/generate-crds.sh [BUILD_DIR]\n")
  message(FATAL_ERROR "crds/ is out of date; run scripts/generate-crds.sh")
endif()
list(LENGTH generated count)
message(STATUS "crds/ is up to date (${count} files)")
