# Run by ctest after fsdp-runtime-tests' discovered tests are defined
# (tests/unit/CMakeLists.txt): adds the label `threads` to the suites whose
# code runs on more than one thread or stack - communicators in process and
# over TCP, the executors (two streams, the comm worker of --prefetch),
# in-process ranks, checkpoint saves, the collective watchdog and its flight
# recorder, the CPU kernels' threads and the SIMT scheduler's fibers - so
# the ThreadSanitizer build runs them with `-L threads`.
set(fsdp_threaded_suites
  "^Communicator" "^TcpCommunicator\\." "^TcpRendezvous\\." "^Executor" "^FsdpRunRanksTest\\."
  "^CheckpointTest\\." "^CollectiveWatchdog" "^FlightRecorder\\." "^InProcessRanks\\."
  "^KernelThreads\\." "^ThreadedKernels\\." "^Registered/DeviceConformance\\." "^SimtScheduler\\.")
foreach(test IN LISTS fsdp-runtime-tests_TESTS)
  foreach(suite IN LISTS fsdp_threaded_suites)
    if(test MATCHES "${suite}")
      # ctest's own set_tests_properties (set_property(TEST) is CMake's):
      # it replaces the list, so it repeats the discovery's label `unit`.
      set_tests_properties("${test}" PROPERTIES LABELS "unit;threads")
      break()
    endif()
  endforeach()
endforeach()
