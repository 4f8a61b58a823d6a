# Sanitizer and fuzzing builds. FSDP_SANITIZE names the sanitizers every
# target of the build is compiled and linked with ("address,undefined" or
# "thread"; empty, the default, is the ordinary build); FSDP_FUZZ adds
# libFuzzer's coverage instrumentation to every target and builds the fuzz
# targets under tests/fuzz. Both apply to the whole tree, not to single
# targets, because a parser's bugs are in the libraries it calls, and ASan
# only sees the accesses of code it instrumented. MLIR, ONNX, protobuf and
# OpenBLAS stay Debian's uninstrumented builds (the allocator and the
# interceptors still cover the memory they hand us). scripts/test.sh
# --sanitize=... and scripts/fuzz.sh configure such builds with clang-19
# (libFuzzer ships with clang; GCC has no -fsanitize=fuzzer).

set(FSDP_SANITIZE "" CACHE STRING
    "Sanitizers for the whole build: address,undefined | thread | empty for none")
option(FSDP_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

if(FSDP_SANITIZE)
  string(REPLACE "," ";" fsdp_sanitizers "${FSDP_SANITIZE}")
  foreach(s ${fsdp_sanitizers})
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "FSDP_SANITIZE: unknown sanitizer '${s}' (valid: address, undefined, thread)")
    endif()
  endforeach()
  if("thread" IN_LIST fsdp_sanitizers AND "address" IN_LIST fsdp_sanitizers)
    message(FATAL_ERROR "FSDP_SANITIZE: thread and address cannot be combined (two builds)")
  endif()
  set(fsdp_sanitize_flag "-fsanitize=${FSDP_SANITIZE}")
  # Every finding fails the run (UBSan otherwise prints and goes on), and
  # reports carry source lines without the cost of full debug info.
  add_compile_options(${fsdp_sanitize_flag} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -gline-tables-only)
  add_link_options(${fsdp_sanitize_flag} -fno-sanitize-recover=all)
  # -O1 is ASan's and TSan's recommended level: reports stay readable and
  # the build, which CI does a second time, takes half as long as -O3.
  set(CMAKE_CXX_FLAGS_RELEASE "-O1 -DNDEBUG" CACHE STRING "" FORCE)
  set(CMAKE_C_FLAGS_RELEASE "-O1 -DNDEBUG" CACHE STRING "" FORCE)
  # Code that must know (fiber switches under ASan, tests a sanitizer
  # cannot run) asks for FSDP_SANITIZED.
  add_compile_definitions(FSDP_SANITIZED)
  message(STATUS "fsdp-opt: sanitizers ${FSDP_SANITIZE}")
endif()

if(FSDP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "FSDP_FUZZ needs clang (libFuzzer): configure with CXX=clang++-19 CC=clang-19")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "fsdp-opt: libFuzzer targets on")
endif()
