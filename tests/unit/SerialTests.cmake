# Run by ctest after the unit suites' discovered tests are defined
# (tests/unit/CMakeLists.txt): marks RUN_SERIAL the tests that bound wall
# time or need ports to stay free, so that ctest -j (scripts/test.sh) never
# runs another test beside them: the collective watchdog's (a stalled rank
# fails the others within timeout + 1 s), the TCP rendezvous and
# communicator's (timeouts of a second or two, and three consecutive free
# ports that a neighbour's ephemeral port could take) and the profiler's
# (a slow gather's wait is exposed only while compute keeps its pace).
# Everything else runs in parallel.
set(fsdp_serial_suites
  "^CollectiveWatchdog" "^TcpRendezvous\\." "^TcpCommunicator\\." "^ExecutorProfileTest\\.")
foreach(test IN LISTS fsdp-runtime-tests_TESTS)
  foreach(suite IN LISTS fsdp_serial_suites)
    if(test MATCHES "${suite}")
      set_tests_properties("${test}" PROPERTIES RUN_SERIAL TRUE)
      break()
    endif()
  endforeach()
endforeach()
# FsdpRunRanksTest runs fsdp-run's ranks (three in process, mpirun -np 2):
# they take the cores of their ranks, as the mpirun suites do.
foreach(test IN LISTS fsdp-runtime-tests_TESTS)
  if(test MATCHES "^FsdpRunRanksTest\\.")
    set_tests_properties("${test}" PROPERTIES PROCESSORS 2)
  endif()
endforeach()
